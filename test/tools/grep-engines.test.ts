/**
 * grep gives the same answer whether ripgrep picks the files to read or the built-in search does:
 * the same walk (`.gitignore`, hidden files, `.git` and `node_modules`, links inside and leading
 * out, the path rules), the same binary files, long lines, CRLF and non-UTF-8 text, the same cap.
 * A pattern ripgrep would read differently (lookbehind) is searched without it; a ripgrep the
 * search no longer needs — the cap reached, the call interrupted — is killed.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { execFileSync } from "node:child_process"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { makeGrep, type PathRule, WorkspaceLive } from "effect-agent-loop"
import { requiredLiterals, ripgrepPattern } from "../../src/tools/grepPattern.ts"
import { tempDir, text, write } from "../support/toolWorkspace.ts"

/**
 * The bound of the tests that make hundreds of grep calls one after another. Each call hands its
 * files to fresh threads and waits for their answers: little CPU (11 s for the 800 calls of the
 * lines test), but many hand-offs between threads, and on a loaded machine each waits its turn
 * for a core: that test took 63 s on an idle machine, 93 s at 3 to 4 times its cores and 150 s at
 * 7 (measured), past the 120 s it had. Only a hanging test waits for this bound.
 */
const LOADED_MS = 300_000

/** The real ripgrep, when installed (CI installs it). */
const RG = ["/usr/bin/rg", "/usr/local/bin/rg", "/opt/homebrew/bin/rg"].find((path) => nodeFs.existsSync(path))

/** One turn of the event loop: real I/O and child processes can move on; no time is waited for. */
const tick = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

/** Turns the event loop until `check` holds (bounded). */
const until = (check: () => boolean, turns = 200_000) =>
  Effect.gen(function*() {
    for (let i = 0; i < turns; i++) {
      if (check()) return
      yield* tick
    }
    return yield* Effect.die(new Error("condition never held"))
  })

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** The live processes whose command line names something under `dir`. */
const leftovers = (dir: string) =>
  nodeFs.readdirSync("/proc").filter((pid) => {
    if (!/^\d+$/.test(pid)) return false
    try {
      return nodeFs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(dir) && !nodeFs.readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ")
    } catch {
      return false
    }
  })

/** An executable shell script at `path`. */
const script = (path: string, body: string) => {
  nodeFs.writeFileSync(path, `#!/bin/sh\n${body}\n`)
  nodeFs.chmodSync(path, 0o755)
}

/** A ripgrep that writes a line to `log` for each search, then is the real one. */
const loggingRipgrep = (dir: string) => {
  const log = nodePath.join(dir, "rg.log")
  const path = nodePath.join(dir, "rg-logging")
  script(path, `case "$1" in --version) ;; *) echo search >> '${log}' ;; esac\nexec '${RG}' "$@"`)
  return { path, searches: () => (nodeFs.existsSync(log) ? nodeFs.readFileSync(log, "utf8").split("\n").filter(Boolean).length : 0) }
}

const bytes = (...parts: ReadonlyArray<string | ReadonlyArray<number>>) =>
  Buffer.concat(parts.map((part) => (typeof part === "string" ? Buffer.from(part, "utf8") : Buffer.from(part))))

/** The fixture: every kind of file and rule the walk and the matching must agree on. */
const fixture = (root: string, outside: string) => {
  write(root, ".gitignore", "build/\n*.log\n!keep.log\n/rootonly.txt\ndocs/**/*.tmp\ntrailing\\ \n")
  write(root, "a.txt", "needle one\nnothing\nneedle two\n")
  write(root, "build/out.txt", "needle ignored\n")
  write(root, "debug.log", "needle ignored log\n")
  write(root, "keep.log", "needle kept log\n")
  write(root, "rootonly.txt", "needle root only\n")
  write(root, "sub/rootonly.txt", "needle not at the root\n")
  write(root, "sub/.gitignore", "local.txt\n!debug2.log\n")
  write(root, "sub/local.txt", "needle local\n")
  write(root, "sub/debug2.log", "needle reincluded\n")
  write(root, "docs/a/b.tmp", "needle tmp\n")
  write(root, "docs/a/b.md", "needle md\n")
  write(root, ".hidden/secret.txt", "needle hidden\n")
  write(root, ".env.example", "needle=1\n")
  write(root, ".git/config", "needle in git\n")
  write(root, "node_modules/m/index.js", "needle in modules\n")
  write(root, "worktree/.git", "gitdir: needle\n")
  write(outside, "secret.txt", "needle outside\n")
  nodeFs.symlinkSync("a.txt", nodePath.join(root, "inner-link.txt"))
  nodeFs.symlinkSync(outside, nodePath.join(root, "outside-dir"))
  nodeFs.symlinkSync(nodePath.join(outside, "secret.txt"), nodePath.join(root, "outside-file.txt"))
  write(root, "bin/blob.bin", bytes("needle", [0, 1, 2], "\nmore\n"))
  write(root, "bin/other.bin", bytes("haystack", [0], "\n"))
  write(root, "bin/late-nul.txt", bytes("x".repeat(8200), "\n", [0], "needle after a NUL far in\n"))
  write(root, "long.txt", `${"a".repeat(700)} needle ${"b".repeat(700)}\n`)
  write(root, "many.txt", "needle many\n".repeat(30))
  write(root, "crlf.txt", "needle one\r\nneedle$end\r\nlone\rcr needle\r\n")
  write(root, "latin1.txt", bytes("caf", [0xe9], " needle\n", [0xff, 0xfe], "x needle\n"))
  write(root, "bom.txt", "\uFEFFneedle at the start\n")
  write(root, "astral.txt", "x\u{1F600}y needle\n")
  write(root, "empty.txt", "")
  write(root, "newline.txt", "\n")
  write(root, "big.txt", `needle big\n${"z".repeat(9000)}\n`)
  write(root, "secret/denied.txt", "needle denied\n")
  write(root, "secret/fine.txt", "needle fine\n")
  write(root, "asked/one.txt", "needle asked\n")
  write(root, "odd name -x.txt", "needle odd\n")
  write(root, "trailing ", "needle trailing space name\n")
}

/** Deny `secret/denied.txt`, ask about `asked/`. */
const pathRule: PathRule = (_tool, path) =>
  path === "secret/denied.txt"
    ? { _tag: "Deny", rule: "Read(secret/denied.txt)" }
    : path === "asked" || path.startsWith("asked/")
    ? { _tag: "Ask", rule: "Read(asked/)" }
    : undefined

const inWorkspace = <A, E>(body: (dirs: { readonly root: string; readonly outside: string }) => Effect.Effect<A, E, any>) =>
  Effect.scoped(Effect.gen(function*() {
    const root = yield* tempDir("ws-engines-")
    const outside = yield* tempDir("outside-engines-")
    return yield* body({ root, outside }).pipe(
      Effect.provide(WorkspaceLive.layer(root, { pathRule }).pipe(Layer.provideMerge(NodeServices.layer)))
    )
  }))

const CASES: ReadonlyArray<Record<string, unknown>> = [
  { pattern: "needle" },
  { pattern: "NEEDLE", ignore_case: true },
  { pattern: "^needle" },
  { pattern: "one$" },
  { pattern: "\\$end$" },
  { pattern: "caf.\\s" },
  { pattern: "..x needle" },
  { pattern: "x..y" },
  { pattern: "x.y" },
  { pattern: "\\bneedle\\b" },
  { pattern: "[^a-z ]needle" },
  { pattern: "needle|haystack" },
  { pattern: "(?:one|two)$" },
  { pattern: "\\d" },
  { pattern: "^$" },
  { pattern: "" },
  { pattern: "\\s$" },
  { pattern: "cr" },
  { pattern: "lone.cr" },
  { pattern: "a{3,}" },
  { pattern: "needle", glob: "*.txt" },
  { pattern: "needle", glob: "docs/**" },
  { pattern: "needle", path: "sub" },
  { pattern: "needle", path: "docs/a" },
  { pattern: "needle", path: "many.txt" },
  { pattern: "needle", path: "bin/blob.bin" },
  { pattern: "(?<=x)needle" },
  { pattern: "(needle) \\1" }
]

describe.skipIf(RG === undefined || !nodeFs.existsSync("/proc/self"))("grep with ripgrep and without", () => {
  it.effect("the same answer for every pattern, path and glob, on every kind of file", () =>
    inWorkspace(({ outside, root }) =>
      Effect.gen(function*() {
        fixture(root, outside)
        const logging = loggingRipgrep(outside)
        const limits = { maxMatches: 40, maxFileBytes: 8500, maxLineLength: 50 }
        const withRg = makeGrep({ ...limits, ripgrep: logging.path })
        const builtin = makeGrep({ ...limits, ripgrep: false })
        const answer = (tool: typeof withRg, args: Record<string, unknown>) =>
          text(tool, args).pipe(Effect.catch((error) => Effect.succeed(`error: ${String((error as Error).message ?? error)}`)))
        for (const args of CASES) {
          const viaRg = yield* answer(withRg, args)
          const viaBuiltin = yield* answer(builtin, args)
          expect(viaRg, JSON.stringify(args)).toBe(viaBuiltin)
        }
        // ripgrep did pick the files for the patterns it can read
        expect(logging.searches()).toBeGreaterThan(20)

        const uncapped = makeGrep({ ...limits, maxMatches: 500, ripgrep: logging.path })
        const all = yield* text(uncapped, { pattern: "needle" })
        expect(all).toBe(yield* text(makeGrep({ ...limits, maxMatches: 500, ripgrep: false }), { pattern: "needle" }))
        // walked: hidden files, a file named .git, re-included by a deeper .gitignore, CRLF, Latin-1, a BOM
        for (
          const line of [
            ".env.example:1: needle=1",
            ".hidden/secret.txt:1: needle hidden",
            "worktree/.git:1: gitdir: needle",
            "keep.log:1: needle kept log",
            "sub/rootonly.txt:1: needle not at the root",
            "sub/debug2.log:1: needle reincluded",
            "docs/a/b.md:1: needle md",
            "crlf.txt:3: lone\rcr needle",
            "latin1.txt:1: caf\uFFFD needle",
            "latin1.txt:2: \uFFFD\uFFFDx needle",
            "bom.txt:1: needle at the start",
            "bin/late-nul.txt:2: \u0000needle after a NUL far in",
            `long.txt:1: ${"a".repeat(50)}\u2026`,
            "odd name -x.txt:1: needle odd",
            "secret/fine.txt:1: needle fine"
          ]
        ) expect(all.split("\n"), line).toContain(line)
        // not walked: ignored, .git, node_modules, links, denied, asked (counted), too large
        for (const gone of ["ignored", "in git", "in modules", "outside", "denied", "needle asked", "needle big", "inner-link", "tmp", "local", "trailing space"]) {
          expect(all, gone).not.toContain(gone)
        }
        expect(all).toContain("[1 binary file(s) also match; grep shows lines of text files only]")
        expect(all).toContain("[1 file(s) or directories the permission rules ask about were not searched")
        expect(yield* text(withRg, { pattern: "^needle$" })).toBe(`No matches for /^needle$/ in "."\n` +
          "[1 file(s) or directories the permission rules ask about were not searched; grep them by their own path to be asked]")
      })
    ), LOADED_MS)

  it.effect("the cap: the same first matches in walk order, then the note, from both", () =>
    inWorkspace(({ root }) =>
      Effect.gen(function*() {
        for (let i = 0; i < 300; i++) write(root, `d${String(i % 7)}/f${String(i).padStart(3, "0")}.txt`, `x\nneedle ${i}\n`.repeat(i % 3))
        const withRg = makeGrep({ maxMatches: 100, ripgrep: RG! })
        const builtin = makeGrep({ maxMatches: 100, ripgrep: false })
        for (const pattern of ["needle", "needle 2\\d\\d", "needle [0-9]+5$", "^x$"]) {
          const viaRg = yield* text(withRg, { pattern })
          expect(viaRg, pattern).toBe(yield* text(builtin, { pattern }))
        }
        const lines = (yield* text(withRg, { pattern: "needle" })).split("\n")
        expect(lines).toHaveLength(101)
        expect(lines[0]).toBe("d0/f007.txt:2: needle 7")
        expect(lines[100]).toBe("[stopped after 100 matches; narrow the pattern, path or glob to see the rest]")
      })
    ), 120_000)

  it.effect("a pattern with lookbehind is searched without ripgrep, and found", () =>
    inWorkspace(({ outside, root }) =>
      Effect.gen(function*() {
        write(root, "a.txt", "xneedle\nyneedle\n")
        write(root, "b.txt", "needle\n")
        const logging = loggingRipgrep(outside)
        const tool = makeGrep({ ripgrep: logging.path })
        expect(yield* text(tool, { pattern: "(?<=x)needle" })).toBe("a.txt:1: xneedle")
        expect(yield* text(tool, { pattern: "(?<!x)needle" })).toBe("a.txt:2: yneedle\nb.txt:1: needle")
        expect(logging.searches()).toBe(0)
        expect(yield* text(tool, { pattern: "[xy]needle" })).toBe("a.txt:1: xneedle\na.txt:2: yneedle")
        expect(logging.searches()).toBe(1)
      })
    ))

  it.effect("a ripgrep inside the workspace is never run", () =>
    inWorkspace(({ root }) =>
      Effect.gen(function*() {
        write(root, "a.txt", "needle\n")
        const marker = nodePath.join(root, "ran")
        script(nodePath.join(root, "rg"), `echo ran > '${marker}'\nexec '${RG}' "$@"`)
        expect(yield* text(makeGrep({ ripgrep: nodePath.join(root, "rg") }), { pattern: "needle" })).toBe("a.txt:1: needle")
        expect(nodeFs.existsSync(marker)).toBe(false)
      })
    ))

  it.live("an interrupted call kills its ripgrep", () =>
    inWorkspace(({ outside, root }) =>
      Effect.gen(function*() {
        write(root, "a.txt", "needle\n")
        const fifo = nodePath.join(outside, "never")
        execFileSync("mkfifo", [fifo])
        const pids = nodePath.join(outside, "pids")
        // answers --version, then hangs reading a FIFO nobody writes to
        script(nodePath.join(outside, "rg-hangs"), `case "$1" in --version) echo "ripgrep 13.0.0"; exit 0 ;; esac\necho $$ >> '${pids}'\nexec /bin/cat '${fifo}'`)
        const fiber = yield* Effect.forkChild(text(makeGrep({ ripgrep: nodePath.join(outside, "rg-hangs") }), { pattern: "needle" }))
        yield* until(() => nodeFs.existsSync(pids) && nodeFs.readFileSync(pids, "utf8").endsWith("\n"))
        const pid = Number(nodeFs.readFileSync(pids, "utf8").trim())
        expect(pid).toBeGreaterThan(1)
        expect(alive(pid)).toBe(true)
        yield* Fiber.interrupt(fiber)
        yield* until(() => !alive(pid))
      })
    ))

  it.live("ripgrep runs the search no longer needs are killed once the cap is reached", () =>
    inWorkspace(({ outside, root }) =>
      Effect.gen(function*() {
        for (let i = 0; i < 400; i++) write(root, `f${String(i).padStart(3, "0")}.txt`, "needle\n")
        const fifo = nodePath.join(outside, "never")
        execFileSync("mkfifo", [fifo])
        // the first search is ripgrep's; the ones after it hang
        script(
          nodePath.join(outside, "rg-first"),
          `case "$1" in --version) exec '${RG}' --version ;; esac\n` +
            `if mkdir '${nodePath.join(outside, "first")}' 2>/dev/null; then exec '${RG}' "$@"; fi\n` +
            `exec /bin/cat '${fifo}'`
        )
        const tool = makeGrep({ maxMatches: 5, ripgrep: nodePath.join(outside, "rg-first") })
        expect((yield* text(tool, { pattern: "needle" })).split("\n")).toHaveLength(6)
        expect(nodeFs.existsSync(nodePath.join(outside, "first"))).toBe(true)
        // the second batch started with the first: if it were not killed, it would hang on the FIFO for ever
        yield* until(() => leftovers(outside).length === 0)
      })
    ))
})

describe("the lines grep shows", () => {
  it.effect("are the file's lines, split at LF (a CR before it dropped), that the JavaScript pattern matches", () =>
    inWorkspace(({ outside, root }) =>
      Effect.gen(function*() {
        fixture(root, outside)
        write(root, "mixed.txt", "alpha 123\r\n\r\nbeta\u2028gamma 45\nlast line no newline")
        const tool = makeGrep({ ripgrep: false, maxMatches: 1000, maxLineLength: 100_000 })
        const files = ["a.txt", "crlf.txt", "latin1.txt", "bom.txt", "astral.txt", "empty.txt", "newline.txt", "many.txt", "mixed.txt", "long.txt"]
        const patterns = [
          ...CASES.map((args) => args["pattern"] as string),
          "^", "$", "^\\s*$", "\\d+$", "\\w+ \\w+$", "(?=\\d)\\d{2}", "(?<!\\w)\\d", "a|$", "(\\w)\\1", "\\r", "gamma"
        ]
        for (const file of files) {
          const lines = new TextDecoder().decode(nodeFs.readFileSync(nodePath.join(root, file))).split(/\r?\n/)
          if (lines[lines.length - 1] === "") lines.pop()
          for (const pattern of patterns) {
            for (const flags of ["", "i"]) {
              const regex = new RegExp(pattern, flags)
              const expected = lines.flatMap((line, i) => (regex.test(line) ? [`${file}:${i + 1}: ${line}`] : []))
              const shown = yield* text(tool, { pattern, path: file, ignore_case: flags === "i" })
              expect(shown, `/${pattern}/${flags} in ${file}`).toBe(
                expected.length === 0 ? `No matches for /${pattern}/ in "${file}"` : expected.join("\n")
              )
            }
          }
        }
      })
    ), LOADED_MS)
})

describe("the patterns ripgrep is given", () => {
  it("translates what means the same, widening where the engines see text differently; refuses the rest", () => {
    expect(ripgrepPattern("foo\\.bar", false)).toBe("foo\\x{2E}bar")
    expect(ripgrepPattern("ab", true)).toBe("[aA][bB]")
    expect(ripgrepPattern("^a$", false)).toBe("^(?:\\x{FEFF})?a\\r?$")
    expect(ripgrepPattern("a.b", false)).toBe("a(?:[^\\n\\r]|(?-u:[\\x80-\\xFF])+)?b")
    expect(ripgrepPattern("\\bx\\d{2,3}", false)).toBe("(?-u:\\b)x[\\x{30}-\\x{39}]{2,3}")
    expect(ripgrepPattern("(?<n>a)|b", false)).toBe("(?:a)|b")
    for (const refused of ["(?<=a)b", "(?<!a)b", "a(?=b)", "a(?!b)", "(a)\\1", "\\k<n>(?<n>a)", "a\\nb", "\\8", "\\a", "\u{1F600}", "é", "[\\u0080-\\uffff]", "x{2000}"]) {
      expect(ripgrepPattern(refused, refused === "é"), refused).toBeUndefined()
    }
  })

  it("finds the text every match must hold, or none", () => {
    expect(requiredLiterals("foo\\w+bar(baz|qux)", false)).toEqual(["foo"])
    expect(requiredLiterals("(?<=ab)cde", false)).toEqual(["cde"])
    expect(requiredLiterals("import|export", true)).toEqual(["import", "export"])
    expect(requiredLiterals("a?b*", false)).toBeUndefined()
    expect(requiredLiterals("é", true)).toBeUndefined()
    expect(requiredLiterals("x\\uFFFDy", false)).toEqual(["x"])
  })
})
