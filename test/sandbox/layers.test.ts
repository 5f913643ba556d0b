/**
 * Choosing the sandbox: `SandboxAuto` takes the platform's where it runs, runs unconfined (saying
 * why in `status`) where it cannot, or refuses every command with `failIfUnavailable`; the library
 * default is `SandboxNone`. And the macOS profile as text (macOS itself is not available here).
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { Sandbox, SandboxAuto } from "effect-agent-loop"
import { profile } from "../../src/layers/sandbox/SandboxMacos.ts"
import * as SandboxPolicy from "../../src/layers/sandbox/policy.ts"
import { bwrapRuns, execIn, makeHome } from "../support/sandbox.ts"

const withHome = <A, E>(body: (dirs: ReturnType<typeof makeHome>) => Effect.Effect<A, E, any>) =>
  Effect.scoped(Effect.gen(function*() {
    const dirs = yield* Effect.acquireRelease(Effect.sync(makeHome), (d) => Effect.sync(d.cleanup))
    return yield* body(dirs)
  })).pipe(Effect.provide(NodeServices.layer)) as Effect.Effect<A, E>

describe("choosing the sandbox", () => {
  it.effect("defaults to none in the library: commands run unconfined", () =>
    Effect.gen(function*() {
      const sandbox = yield* Sandbox
      expect(sandbox.kind).toBe("none")
      expect((yield* sandbox.status).available).toBe(false)
    }))

  it.live.skipIf(!bwrapRuns)("takes bubblewrap on Linux where it runs", () =>
    withHome(({ home }) =>
      Effect.gen(function*() {
        const sandbox = yield* SandboxAuto.make({ platform: "linux", home })
        expect(sandbox.kind).toBe("linux")
        expect(yield* sandbox.status).toMatchObject({ kind: "linux", available: true })
      })))

  it.live("runs unconfined where bubblewrap is missing, saying why; with failIfUnavailable refuses every command", () =>
    withHome(({ home, workspace }) =>
      Effect.gen(function*() {
        const open = yield* SandboxAuto.make({ platform: "linux", home, bwrap: "/nonexistent/bwrap" })
        expect(open.kind).toBe("none")
        expect(yield* open.status).toMatchObject({ kind: "linux", available: false, reason: "bubblewrap is not at /nonexistent/bwrap" })
        expect((yield* execIn(open, workspace, { command: "echo ran" })).text).toBe("exit code: 0\nran\n")

        const closed = yield* SandboxAuto.make({ platform: "linux", home, bwrap: "/nonexistent/bwrap", failIfUnavailable: true })
        const error = yield* Effect.flip(execIn(closed, workspace, { command: "touch ran" }))
        expect(error.message).toContain("The sandbox cannot start: bubblewrap is not at /nonexistent/bwrap")
        expect(fs.existsSync(path.join(workspace, "ran"))).toBe(false)

        const elsewhere = yield* SandboxAuto.make({ platform: "win32", failIfUnavailable: true })
        expect((yield* elsewhere.status).reason).toContain("no sandbox runs on win32")
        expect((yield* Effect.flip(execIn(elsewhere, workspace, { command: "true" }))).message).toContain("--sandbox off")
      })))
})

describe("the macOS profile (as text: not run here)", () => {
  it("denies writes but to the writable trees, then the held paths, hides credentials, and allows only the proxy's port", () => {
    const policy = SandboxPolicy.compile({
      workspace: "/w",
      cwd: "/w",
      home: "/h",
      git: { dir: "/w/.git", commonDir: "/w/.git", hooks: "/w/.git/hooks" },
      kindOf: (p) => ["/", "/w", "/w/.git", "/w/.git/hooks", "/h/.ssh"].includes(p) ? "dir" : p === "/w/.git/config" ? "file" : "missing",
      hostEnv: {},
      isSecret: () => false,
      allowedHosts: ["example.com"]
    })
    const text = profile(policy, { tmpDir: "/s/tmp", proxyPort: 40123 })
    const lines = text.split("\n")
    const at = (prefix: string) => lines.findIndex((l) => l.startsWith(prefix))
    expect(lines[0]).toBe("(version 1)")
    expect(at("(deny file-write*)")).toBeLessThan(at("(allow file-write* (subpath \"/w\") (subpath \"/s/tmp\")"))
    expect(at("(allow file-write* (subpath \"/w\")")).toBeLessThan(at("(deny file-write* (subpath \"/w/.git/hooks\") (subpath \"/w/.git/config\")"))
    expect(text).toContain("(subpath \"/w/.claude\")") // held before it exists: Seatbelt matches paths, not mounts
    expect(text).toContain("(deny file-read* file-write* (subpath \"/h/.ssh\"))")
    expect(text).toContain("(allow network-outbound (remote ip \"localhost:40123\"))")
    expect(at("(deny network*)")).toBeLessThan(at("(allow network-outbound"))
  })
})
