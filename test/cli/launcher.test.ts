/**
 * The launcher's parts (`src/cli/launcher.ts`): which variables and arguments it hides, and that a
 * handover is taken only from a private file of its own making, then deleted. The whole launcher,
 * through the real bin, is in `launcher-environ.test.ts`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { credentialNames, maskArgument, passwordFlags, readHandover, writeHandover } from "../../src/cli/launcher.ts"
import { tempDir } from "../support/cliProcess.ts"

describe("launcher", () => {
  it("hides variables that look like credentials by name or value, and nothing else", () => {
    expect(credentialNames({
      OPENAI_API_KEY: "sk-1",
      GITHUB_TOKEN: "x",
      AGENT_LOOP_DATABASE_URL: "postgres://u:pw@h/db",
      PLAIN_URL: "postgres://u@h/db",
      SOME_VALUE: "sk-proj-abc",
      EMPTY_TOKEN: "",
      PATH: "/usr/bin",
      HOME: "/home/u"
    })).toEqual(["OPENAI_API_KEY", "GITHUB_TOKEN", "AGENT_LOOP_DATABASE_URL", "SOME_VALUE"])
  })

  it("masks URL passwords in arguments, in both flag forms", () => {
    expect(maskArgument("postgres://agent:s3cret@db:5432/x")).toBe("postgres://agent:***@db:5432/x")
    expect(maskArgument("--database-url=postgres://agent:s3cret@db/x")).toBe("--database-url=postgres://agent:***@db/x")
    expect(maskArgument("postgres://agent@db/x")).toBe("postgres://agent@db/x")
    expect(maskArgument("what is a:b@c?")).toBe("what is a:b@c?")
    expect(maskArgument("redis://:s3cret@cache/0")).toBe("redis://:***@cache/0")
    expect(maskArgument("--base-url=https://tok3n@git.example.com/x")).toBe("--base-url=https://***@git.example.com/x")
    expect(maskArgument("https://tok3n:x-oauth-basic@h/x")).toBe("https://***:***@h/x")
    expect(maskArgument("https://example.com:8443/a@b")).toBe("https://example.com:8443/a@b")
    expect(passwordFlags(["run", "--database-url", "postgres://a:b@h/d", "--cluster=postgres://a:c@h/d", "--model", "m"])).toEqual([
      "--database-url",
      "--cluster"
    ])
    expect(passwordFlags(["run", "--database-url", "postgres://a@h/d"])).toEqual([])
  })

  it("writes a private handover, reads it once and deletes it with its directory", () => {
    const base = tempDir()
    const file = writeHandover({ env: { OPENAI_API_KEY: "sk-x" }, argv: ["run", "hi"] }, { XDG_RUNTIME_DIR: base })!
    expect(path.dirname(path.dirname(file))).toBe(base)
    expect(fs.statSync(file).mode & 0o777).toBe(0o600)
    expect(fs.statSync(path.dirname(file)).mode & 0o777).toBe(0o700)
    expect(readHandover(file)).toEqual({ env: { OPENAI_API_KEY: "sk-x" }, argv: ["run", "hi"] })
    expect(fs.readdirSync(base)).toEqual([])
    expect(() => readHandover(file)).toThrow()
  })

  it("refuses a handover file others may read, or a link, and leaves them in place", () => {
    const base = tempDir()
    const open = writeHandover({ env: { A_TOKEN: "t" } }, { XDG_RUNTIME_DIR: base })!
    fs.chmodSync(open, 0o644)
    expect(() => readHandover(open)).toThrow("not a private handover")
    expect(fs.existsSync(open)).toBe(true)
    const dir = fs.mkdtempSync(path.join(base, "agent-loop-"))
    const link = path.join(dir, "handover.json")
    const target = path.join(base, "elsewhere.json")
    fs.writeFileSync(target, JSON.stringify({ env: {} }), { mode: 0o600 })
    fs.symlinkSync(target, link)
    expect(() => readHandover(link)).toThrow()
    expect(fs.existsSync(target)).toBe(true)
    expect(() => readHandover(target)).toThrow("does not name a handover file")
  })
})
