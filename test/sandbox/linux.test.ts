/**
 * The Linux sandbox on real bubblewrap, through `exec`: credentials in a fake home stay unreadable
 * and the home unwritable, the agent's environment is out of reach, git works in the workspace and
 * in a linked worktree, `npm test` runs, git's hooks cannot be written, the private TMPDIR works,
 * a timeout kills the whole confined tree, and without bubblewrap nothing runs. Skipped, saying
 * so, where bubblewrap is missing or cannot create its namespaces.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeExec, SANDBOX_DENIED_MARKER, SandboxLinux, type SandboxShape } from "effect-agent-loop"
import { bwrapRuns, execIn, git, KEY, makeHome, suiteName } from "../support/sandbox.ts"
import { waitUntil } from "../support/waitUntil.ts"

/** Runs `body` with a fresh home, workspace and Linux sandbox (with `options`), all removed afterwards. */
const withSandbox = <A, E>(
  options: SandboxLinux.LinuxOptions,
  body: (sandbox: SandboxShape, dirs: ReturnType<typeof makeHome>) => Effect.Effect<A, E>
) =>
  Effect.scoped(Effect.gen(function*() {
    const dirs = yield* Effect.acquireRelease(Effect.sync(makeHome), (d) => Effect.sync(d.cleanup))
    const sandbox = yield* SandboxLinux.make({ home: dirs.home, ...options })
    return yield* body(sandbox, dirs)
  })).pipe(Effect.provide(NodeServices.layer))

/** Whether some process on this machine has `marker` in its command line. */
const running = (marker: string): boolean =>
  fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p)).some((pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(marker)
    } catch {
      return false
    }
  })

describe.skipIf(!bwrapRuns)(suiteName("the Linux sandbox (bubblewrap)"), () => {
  it.live("keeps ~/.ssh unreadable and the home read-only, and marks the denial", () =>
    withSandbox({}, (sandbox, { home, workspace }) =>
      Effect.gen(function*() {
        const read = yield* execIn(sandbox, workspace, { command: `cat ${home}/.ssh/id_rsa; ls -A ${home}/.ssh | wc -l` })
        expect(read.text).not.toContain(KEY)
        expect(read.text).toContain("No such file or directory")
        const write = yield* execIn(sandbox, workspace, { command: "echo evil >> ~/.bashrc" })
        expect(write.isError).toBe(true)
        expect(write.text).toContain("Read-only file system")
        expect(write.text.split("\n").at(-1)).toMatch(new RegExp(`^${SANDBOX_DENIED_MARKER.replace("[", "\\[")}a write to a read-only place`))
        expect(fs.readFileSync(path.join(home, ".bashrc"), "utf8")).toBe("# bashrc\n")
      })))

  it.live("holds against the commands that got past the text rules: git diff --no-index writes no ~/.bashrc and reads no key", () =>
    withSandbox({}, (sandbox, { home, workspace }) =>
      Effect.gen(function*() {
        fs.writeFileSync(path.join(workspace, "README.md"), "# readme\n")
        const marker = path.join(workspace, "PWNED")
        const write = yield* execIn(sandbox, workspace, {
          command: `git diff --no-index --output=$HOME/.bashrc --dst-prefix='$(touch ${marker})' /dev/null README.md`
        })
        expect(write.text).toContain("Read-only file system")
        expect(fs.readFileSync(path.join(home, ".bashrc"), "utf8")).toBe("# bashrc\n")
        const read = yield* execIn(sandbox, workspace, { command: "git diff --no-index /dev/null ~/.ssh/id_rsa" })
        expect(read.text).not.toContain(KEY)
        // and the carriage return that hid `; touch …` from the reader: sh runs it, in the workspace only
        const hidden = yield* execIn(sandbox, workspace, { command: "git status\r#; touch $HOME/PWNED" })
        expect(fs.existsSync(path.join(home, "PWNED"))).toBe(false)
        expect(hidden.text).toContain("Read-only file system")
      })))

  it.live("hides the agent's environment: nothing in the sandbox's /proc holds a secret of the parent", () =>
    withSandbox({}, (sandbox, { workspace }) =>
      Effect.gen(function*() {
        process.env["SANDBOX_TEST_MARKER"] = "marker-7f3a9c"
        const result = yield* execIn(sandbox, workspace, {
          command: "cat /proc/$PPID/environ /proc/1/environ /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c marker-7f3a9c; " +
            "echo \"[$SANDBOX_TEST_MARKER]\"; ls /proc | grep -E '^[0-9]+$' | wc -l"
        }).pipe(Effect.ensuring(Effect.sync(() => delete process.env["SANDBOX_TEST_MARKER"])))
        const [count, echoed, pids] = result.text.split("\n").slice(1)
        expect(count).toBe("0")
        expect(echoed).toBe("[]")
        expect(Number(pids)).toBeLessThan(10) // its own pid namespace: bubblewrap's init, the shell and its pipeline
      })))

  it.live("lets git commit in the workspace and in a linked worktree, but not write git's hooks or config", () =>
    withSandbox({}, (sandbox, { home, workspace }) =>
      Effect.gen(function*() {
        const commit = "git -c user.name=T -c user.email=t@example.com commit -q -m"
        const first = yield* execIn(sandbox, workspace, { command: `echo a > a.txt && git add a.txt && ${commit} first && git log --oneline | wc -l` })
        expect(first.text).toBe("exit code: 0\n1\n")
        const hooks = yield* execIn(sandbox, workspace, {
          command: "echo 'echo pwned' > .git/hooks/pre-commit; git config core.hooksPath elsewhere; mv .git .git-old; ls .git/hooks | wc -l"
        })
        expect(hooks.text).toContain("Read-only file system")
        expect(fs.existsSync(path.join(workspace, ".git", "hooks", "pre-commit"))).toBe(false)
        expect(fs.existsSync(path.join(workspace, ".git-old"))).toBe(false)
        expect(fs.readFileSync(path.join(workspace, ".git", "config"), "utf8")).not.toContain("hooksPath")

        const tree = path.join(home, "wt")
        git(workspace, "worktree", "add", "-q", tree)
        const second = yield* execIn(sandbox, tree, { command: `echo b > b.txt && git add b.txt && ${commit} second && git log --oneline | wc -l` })
        expect(second.text).toBe("exit code: 0\n2\n")
        const pointer = yield* execIn(sandbox, tree, { command: "echo 'gitdir: /elsewhere' > .git" })
        expect(pointer.text).toContain("Read-only file system")
      })))

  it.live("runs npm test of a small project, with a private TMPDIR that keeps its files between commands", () =>
    withSandbox({}, (sandbox, { workspace }) =>
      Effect.gen(function*() {
        fs.writeFileSync(path.join(workspace, "package.json"), JSON.stringify({ name: "t", version: "1.0.0", scripts: { test: "node test.js" } }))
        fs.writeFileSync(path.join(workspace, "test.js"), "require('fs').writeFileSync(require('os').tmpdir() + '/ran', 'yes'); console.log('tests passed')\n")
        const npm = yield* execIn(sandbox, workspace, { command: "npm test 2>&1 | grep 'tests passed'" })
        expect(npm.text).toBe("exit code: 0\ntests passed\n")
        const tmp = yield* execIn(sandbox, workspace, { command: "echo \"$TMPDIR\"; cat \"$TMPDIR/ran\"; echo; f=$(mktemp) && echo ok > \"$f\" && cat \"$f\"" })
        expect(tmp.text).toBe("exit code: 0\n/tmp\nyes\nok\n")
      })))

  it.live("keeps the PATH directories that live under the host's /tmp in sight, read-only", () =>
    withSandbox({}, (sandbox, { workspace }) =>
      Effect.gen(function*() {
        // a Node or a checkout under /tmp (as a CI clone may be) must not vanish behind the private /tmp
        const bin = fs.mkdtempSync("/tmp/agent-loop-sandbox-bin-")
        fs.writeFileSync(path.join(bin, "hello-from-tmp"), "#!/bin/sh\necho hello from tmp\n", { mode: 0o755 })
        const saved = process.env["PATH"]
        process.env["PATH"] = `${bin}:${saved ?? "/usr/bin:/bin"}`
        const result = yield* execIn(sandbox, workspace, { command: `hello-from-tmp && echo x > ${bin}/written` }).pipe(
          Effect.ensuring(Effect.sync(() => {
            process.env["PATH"] = saved
            fs.rmSync(bin, { recursive: true, force: true })
          }))
        )
        expect(result.text).toContain("hello from tmp\n")
        expect(result.text).toContain("Read-only file system")
      })))

  it.effect("kills the whole confined process tree on a timeout", () =>
    withSandbox({}, (sandbox, { workspace }) =>
      Effect.gen(function*() {
        const marker = `${Date.now() % 100000 + 900000}`
        const tool = makeExec({ killGrace: "100 millis" })
        const fiber = yield* Effect.forkChild(execIn(sandbox, workspace, {
          command: `sleep ${marker} & sleep ${marker} & echo started > ready; wait`,
          timeout_ms: 5_000
        }, { tool }))
        yield* Effect.promise(() => waitUntil("the confined commands to start", () => fs.existsSync(path.join(workspace, "ready")) && running(`sleep ${marker}`)))
        yield* TestClock.adjust("5 seconds")
        const error = yield* Effect.flip(Fiber.join(fiber))
        expect(error.message).toContain("Command timed out after 5000 ms")
        yield* Effect.promise(() => waitUntil("every confined process to end", () => !running(`sleep ${marker}`)))
      })))

  it.live("kills the whole confined process tree when the call is interrupted", () =>
    withSandbox({}, (sandbox, { workspace }) =>
      Effect.gen(function*() {
        const marker = `${Date.now() % 100000 + 800000}`
        const fiber = yield* Effect.forkChild(execIn(sandbox, workspace, { command: `sleep ${marker} & echo started > ready; wait` }))
        yield* Effect.promise(() => waitUntil("the confined command to start", () => fs.existsSync(path.join(workspace, "ready")) && running(`sleep ${marker}`)))
        yield* Fiber.interrupt(fiber)
        yield* Effect.promise(() => waitUntil("every confined process to end", () => !running(`sleep ${marker}`)))
      })))

  it.live("fails closed without bubblewrap: one line naming the fix, and nothing runs", () =>
    withSandbox({ bwrap: "/nonexistent/bwrap" }, (sandbox, { workspace }) =>
      Effect.gen(function*() {
        const status = yield* sandbox.status
        expect(status).toMatchObject({ kind: "linux", available: false, reason: "bubblewrap is not at /nonexistent/bwrap" })
        const error = yield* Effect.flip(execIn(sandbox, workspace, { command: "touch ran" }))
        expect(error._tag).toBe("ToolError")
        expect(error.message.split("\n")).toHaveLength(1)
        expect(error.message).toContain("apt install bubblewrap")
        expect(error.message).toContain("--sandbox off")
        expect(fs.existsSync(path.join(workspace, "ran"))).toBe(false)
      })))

  it.live("runs outside the sandbox only on the approval layer's grant of that very call, once", () =>
    withSandbox({}, (sandbox, { home, workspace }) =>
      Effect.gen(function*() {
        const command = `cat ${home}/.ssh/id_rsa`
        const refused = yield* Effect.flip(execIn(sandbox, workspace, { command, dangerously_unsandboxed: true }, { toolCallId: "call-9" }))
        expect(refused.message).toContain("needs the user's approval of this very call")
        yield* sandbox.grantUnsandboxed("call-8") // another call's grant does not count
        expect((yield* Effect.flip(execIn(sandbox, workspace, { command, dangerously_unsandboxed: true }, { toolCallId: "call-9" }))).message)
          .toContain("needs the user's approval")
        yield* sandbox.grantUnsandboxed("call-9")
        const outside = yield* execIn(sandbox, workspace, { command, dangerously_unsandboxed: true }, { toolCallId: "call-9" })
        expect(outside.text).toBe(`exit code: 0\n${KEY}`)
        const again = yield* Effect.flip(execIn(sandbox, workspace, { command, dangerously_unsandboxed: true }, { toolCallId: "call-9" }))
        expect(again.message).toContain("needs the user's approval")
      })))

  it.live("says when a command created a protected location, which is read-only from the next command on", () =>
    withSandbox({}, (sandbox, { workspace }) =>
      Effect.gen(function*() {
        const made = yield* execIn(sandbox, workspace, { command: "mkdir .claude && echo '{}' > .claude/settings.json" })
        expect(made.text).toContain("[sandbox: the command created .claude: protected locations")
        const next = yield* execIn(sandbox, workspace, { command: "echo '{\"hooks\":1}' > .claude/settings.json" })
        expect(next.text).toContain("Read-only file system")
        expect(fs.readFileSync(path.join(workspace, ".claude", "settings.json"), "utf8")).toBe("{}\n")
      })))
})
