/**
 * The docs: the generated reference tables match the code (`npm run docs -- --check`), and every
 * relative link between the README and the pages of `docs/` leads to a file, and to a heading when
 * it names one.
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { root } from "../support/cliProcess.ts"

/** Runs `node scripts/docs.ts ARGS` from `dir` (a checkout, or a copy of its scripts and docs). */
const generator = (dir: string, args: ReadonlyArray<string>) =>
  new Promise<{ readonly code: number; readonly stdout: string; readonly stderr: string }>((resolve) => {
    execFile(process.execPath, [path.join(dir, "scripts", "docs.ts"), ...args], { timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr }))
  })

/**
 * A copy of the scripts and docs beside the real sources (inside the repository, so that `effect`
 * resolves as it does for the real ones), for runs that change the pages.
 */
const copyOfDocs = (): string => {
  fs.mkdirSync(path.join(root, ".tmp"), { recursive: true })
  const dir = fs.mkdtempSync(path.join(root, ".tmp", "docs-"))
  fs.cpSync(path.join(root, "scripts"), path.join(dir, "scripts"), { recursive: true })
  fs.cpSync(path.join(root, "docs"), path.join(dir, "docs"), { recursive: true })
  fs.symlinkSync(path.join(root, "src"), path.join(dir, "src"))
  return dir
}

// Each run loads the whole CLI definition: generous deadlines on a shared machine.
describe("the generated reference tables", { timeout: 120_000 }, () => {
  it("match the code (if not: run `npm run docs` and commit the result)", async () => {
    const result = await generator(root, ["--check"])
    expect(result.code, `The generated docs are stale. Run \`npm run docs\` and commit the result.\n${result.stderr}`).toBe(0)
  })

  it("--check fails on a stale table, naming the page, and a run brings it back", async () => {
    const dir = copyOfDocs()
    try {
      const page = path.join(dir, "docs", "configuration.md")
      const original = fs.readFileSync(page, "utf8")
      fs.writeFileSync(page, original.replace("| `maxIterations` | `integer ≥ 1` | `20` |", "| `maxIterations` | `integer ≥ 1` | `21` |"))
      expect(fs.readFileSync(page, "utf8")).not.toBe(original)
      const stale = await generator(dir, ["--check"])
      expect(stale.code).toBe(1)
      expect(stale.stderr).toContain("docs/configuration.md")
      expect(stale.stderr).toContain("npm run docs")
      const written = await generator(dir, [])
      expect(written.code).toBe(0)
      expect(fs.readFileSync(page, "utf8")).toBe(original)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it("a page without its region is an error naming the region", async () => {
    const dir = copyOfDocs()
    try {
      const page = path.join(dir, "docs", "events.md")
      fs.writeFileSync(page, fs.readFileSync(page, "utf8").replace("<!-- /generated:events -->", ""))
      const result = await generator(dir, ["--check"])
      expect(result.code).toBe(1)
      expect(result.stderr).toContain("docs/events.md has no region <!-- generated:events -->")
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes. */
const slug = (heading: string): string =>
  heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-")

/** The anchors of a Markdown text's headings (a repeated heading gets `-1`, `-2`, …). */
const anchors = (markdown: string): Set<string> => {
  const seen = new Map<string, number>()
  const found = new Set<string>()
  for (const match of markdown.replace(/```[\s\S]*?```/g, "").matchAll(/^#{1,6}\s+(.+)$/gm)) {
    const base = slug(match[1]!)
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    found.add(count === 0 ? base : `${base}-${count}`)
  }
  return found
}

/** The text with fenced blocks and inline code blanked, so that examples are not read as links or headings. */
const withoutCode = (markdown: string): string => markdown.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "``")

/** Every relative link of `file` (a Markdown file) that leads nowhere, with the reason. */
const brokenLinks = (file: string, read: (file: string) => string | undefined): Array<string> => {
  const broken: Array<string> = []
  const text = read(file)!
  for (const match of withoutCode(text).matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = match[1]!
    if (/^[a-z]+:/i.test(target)) continue
    const [pathPart, anchor] = target.split("#") as [string, string | undefined]
    const resolved = pathPart === "" ? file : path.join(path.dirname(file), decodeURIComponent(pathPart))
    const content = read(resolved)
    if (content === undefined) {
      broken.push(`${target}: no such file`)
      continue
    }
    if (anchor !== undefined && resolved.endsWith(".md") && !anchors(content).has(anchor)) broken.push(`${target}: no heading #${anchor}`)
  }
  return broken
}

const readIfExists = (file: string): string | undefined =>
  fs.existsSync(file) ? (fs.statSync(file).isDirectory() ? "" : fs.readFileSync(file, "utf8")) : undefined

describe("links between the README and docs/", () => {
  const pages = [
    path.join(root, "README.md"),
    ...fs.readdirSync(path.join(root, "docs"), { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".md"))
      .map((file) => path.join(root, "docs", file))
  ]

  it.each(pages.map((page) => [path.relative(root, page), page]))("%s: every relative link resolves, anchors included", (_, page) => {
    expect(brokenLinks(page, readIfExists)).toEqual([])
  })

  it("the README links every page of docs/", () => {
    const readme = fs.readFileSync(path.join(root, "README.md"), "utf8")
    const linked = new Set([...readme.matchAll(/\]\(docs\/([^)#]+)/g)].map((match) => match[1]))
    const unlinked = pages.filter((page) => path.relative(root, page).startsWith(`docs${path.sep}`)).map((page) => path.relative(path.join(root, "docs"), page))
      .filter((page) => !linked.has(page))
    expect(unlinked).toEqual([])
  })

  it("the checker finds a missing file, a missing heading, and takes GitHub's anchors", () => {
    const files: Record<string, string> = {
      "/d/a.md": "# Title\n\n## What `turn` returns\n\n## Notes\n\n## Notes\n\n[ok](b.md#12-dependencies) [ok](#what-turn-returns) [ok](#notes-1)\n" +
        "[gone](c.md) [bad](b.md#nothing) [web](https://example.com/x#y)\n```md\n[in code](nowhere.md)\n```\n",
      "/d/b.md": "## 12. Dependencies\n"
    }
    expect(brokenLinks("/d/a.md", (file) => files[file])).toEqual(["c.md: no such file", "b.md#nothing: no heading #nothing"])
  })
})
