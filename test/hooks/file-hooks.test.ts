import * as fsp from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { EventBus, FileHooks, Hook, Hooks, Message, type Turn } from "effect-agent-loop"
import { context, errorsOf, exec, fifo, isAlive, readFifo, tempDirs, toolHook, withFileHooks, writeHook } from "../support/fileHooks.ts"
import { points } from "../support/hooksRunner.ts"

describe("FileHooks", () => {
  it.effect("exit 2 denies a tool call with stderr as the reason", () =>
    Effect.gen(function*() {
      const dirs = yield* tempDirs
      yield* writeHook(dirs.project, "guard", toolHook("guard", "cat > /dev/null\necho 'no shell today' >&2\nexit 2"))
      yield* Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        expect(yield* hooks.beforeTool({ context, call: exec({ cmd: "ls" }) })).toEqual({
          _tag: "Deny",
          reason: "no shell today",
          hook: "guard"
        })
      }).pipe(withFileHooks(dirs))
    }).pipe(Effect.scoped))

  it.effect("the event reaches the script as JSON on stdin, run in the work dir", () =>
    Effect.gen(function*() {
      const dirs = yield* tempDirs
      const out = path.join(dirs.root, "event.json")
      yield* writeHook(dirs.user, "spy", toolHook("spy", `cat > '${out}'\npwd >> '${dirs.root}/cwd.txt'`))
      yield* Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        yield* TestClock.setTime(Date.UTC(2030, 0, 2, 3, 4, 5))
        yield* hooks.beforeTool({ context: { ...context, parentTurnId: "p0" }, call: exec({ cmd: "ls" }) })
      }).pipe(withFileHooks(dirs))
      const event = JSON.parse(yield* Effect.promise(() => fsp.readFile(out, "utf8")))
      expect(event).toEqual({
        event_type: "pre-tool-call",
        timestamp: "2030-01-02T03:04:05.000Z",
        session_id: "s1",
        work_dir: dirs.work,
        turn_id: "t1",
        iteration: 1,
        depth: 0,
        parent_turn_id: "p0",
        tool_name: "exec",
        tool_input: { cmd: "ls" },
        tool_use_id: "call-1"
      })
      expect((yield* Effect.promise(() => fsp.readFile(path.join(dirs.root, "cwd.txt"), "utf8"))).trim()).toBe(
        yield* Effect.promise(() => fsp.realpath(dirs.work))
      )
    }).pipe(Effect.scoped))

  it.effect("stdout JSON: modified_input changes the arguments, decision deny denies with its reason", () =>
    Effect.gen(function*() {
      const dirs = yield* tempDirs
      yield* writeHook(
        dirs.project,
        "rewrite",
        toolHook("rewrite", `cat > /dev/null\necho '{"decision": "allow", "modified_input": {"cmd": "ls -l"}}'`, { priority: 200 })
      )
      yield* writeHook(
        dirs.project,
        "veto",
        toolHook("veto", `grep -q '"ls -l"' && echo '{"decision": "deny", "reason": "saw the rewrite"}'`, { priority: 100 })
      )
      yield* Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        expect(yield* hooks.beforeTool({ context, call: exec({ cmd: "ls" }) })).toEqual({
          _tag: "Deny",
          reason: "saw the rewrite",
          hook: "veto"
        })
      }).pipe(withFileHooks(dirs))
    }).pipe(Effect.scoped))

  it.effect("modified_input alone is what the tool runs with", () =>
    Effect.gen(function*() {
      const dirs = yield* tempDirs
      yield* writeHook(dirs.project, "rewrite", toolHook("rewrite", `cat > /dev/null\necho '{"modified_input": {"cmd": "ls -l"}}'`))
      yield* Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        expect(yield* hooks.beforeTool({ context, call: exec({ cmd: "ls" }) })).toEqual({ _tag: "Continue", arguments: { cmd: "ls -l" } })
      }).pipe(withFileHooks(dirs))
    }).pipe(Effect.scoped))

  it.effect("a hanging script is killed at its timeout and the call continues", () =>
    Effect.gen(function*() {
      const dirs = yield* tempDirs
      const ready = yield* fifo(dirs, "ready")
      yield* writeHook(dirs.project, "hang", toolHook("hang", `cat > /dev/null\necho $$ > '${ready}'\nexec sleep 1000`, { timeout: 3000 }))
      yield* Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        const sub = yield* (yield* EventBus).subscribe({ capacity: 64 })
        const pending = yield* Effect.forkChild(hooks.beforeTool({ context, call: exec({ cmd: "ls" }) }))
        const pid = Number(yield* readFifo(ready))
        expect(isAlive(pid)).toBe(true)
        yield* TestClock.adjust(2_999)
        expect(pending.pollUnsafe()).toBeUndefined()
        yield* TestClock.adjust(1)
        expect(yield* Fiber.join(pending)).toEqual({ _tag: "Continue", arguments: { cmd: "ls" } })
        expect(isAlive(pid)).toBe(false)
        expect(errorsOf(yield* sub.takeAll)).toMatchObject([
          { stage: "beforeTool", hook: "hang", message: "beforeTool failed: timed out after 3000ms", at: 3_000 }
        ])
      }).pipe(withFileHooks(dirs))
    }).pipe(Effect.scoped))

  it.effect("garbage stdout and odd exit codes continue (fail open) with Error events", () =>
    Effect.gen(function*() {
      const dirs = yield* tempDirs
      yield* writeHook(dirs.project, "garbage", toolHook("garbage", "cat > /dev/null\necho 'this is not json'", { priority: 300 }))
      yield* writeHook(dirs.project, "crash", toolHook("crash", "cat > /dev/null\necho 'oops' >&2\nexit 3", { priority: 200 }))
      yield* Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        const sub = yield* (yield* EventBus).subscribe({ capacity: 64 })
        expect(yield* hooks.beforeTool({ context, call: exec({ cmd: "ls" }) })).toEqual({ _tag: "Continue", arguments: { cmd: "ls" } })
        expect(errorsOf(yield* sub.takeAll).map((e) => [e.hook, e.message])).toEqual([
          ["garbage", "beforeTool failed: unparseable stdout: this is not json"],
          ["crash", "beforeTool failed: exited with code 3: oops"]
        ])
      }).pipe(withFileHooks(dirs))
    }).pipe(Effect.scoped))

  // The script keeps at most 1 MiB of stderr; the runner then cuts the reason to the hook text limit.
  it.effect("stderr is capped at 1 MiB, and the deny reason made of it at the hook text limit", () =>
    Effect.gen(function*() {
      const dirs = yield* tempDirs
      yield* writeHook(
        dirs.project,
        "loud",
        toolHook("loud", "cat > /dev/null\nhead -c 2097152 /dev/zero | tr '\\000' x >&2\nexit 2")
      )
      yield* Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        const outcome = yield* hooks.beforeTool({ context, call: exec({ cmd: "ls" }) })
        expect(outcome._tag).toBe("Deny")
        const reason = outcome._tag === "Deny" ? outcome.reason : ""
        expect(reason.length).toBeLessThanOrEqual(Hook.TEXT_LIMIT)
        expect(reason.length).toBeGreaterThan(Hook.TEXT_LIMIT - 100)
        const kept = reason.indexOf("\n")
        expect(reason.slice(0, kept)).toBe("x".repeat(kept))
        expect(reason.slice(kept)).toBe(`\n[hook text cut: ${1024 * 1024 - kept} of ${1024 * 1024} characters removed]`)
      }).pipe(withFileHooks(dirs))
    }).pipe(Effect.scoped))

  it.effect("a project hook replaces the user hook of the same name", () =>
    Effect.gen(function*() {
      const dirs = yield* tempDirs
      yield* writeHook(dirs.user, "guard", toolHook("guard", "echo from-user >&2\nexit 2"))
      const projectPath = yield* writeHook(dirs.project, "guard", toolHook("guard", "echo from-project >&2\nexit 2"))
      yield* Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        expect(yield* hooks.beforeTool({ context, call: exec({}) })).toMatchObject({ _tag: "Deny", reason: "from-project" })
        expect(yield* hooks.list).toEqual([{ name: "guard", priority: 100, source: projectPath, handlers: ["beforeTool", "approveTool"] }])
      }).pipe(withFileHooks(dirs))
    }).pipe(Effect.scoped))

  it.effect("a pre-tool-call reply \"approve\" approves the call at the approval step; \"allow\" only lets it go on", () =>
    Effect.gen(function*() {
      const dirs = yield* tempDirs
      yield* writeHook(
        dirs.user,
        "approver",
        toolHook("approver", `if grep -q '"cmd":"ok"'; then echo '{"decision":"approve","reason":"known safe"}'; else echo '{"decision":"allow"}'; fi`)
      )
      yield* Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        const approved = exec({ cmd: "ok" })
        expect(yield* hooks.beforeTool({ context, call: approved })).toMatchObject({ _tag: "Continue" })
        expect(yield* hooks.approveTool({ context, call: approved })).toEqual({ _tag: "Approve" })
        // approval is for that call only, once
        expect(yield* hooks.approveTool({ context, call: approved })).toMatchObject({ _tag: "Deny" })
        const other = { ...exec({ cmd: "other" }), id: "call-2" }
        expect(yield* hooks.beforeTool({ context, call: other })).toMatchObject({ _tag: "Continue" })
        expect(yield* hooks.approveTool({ context, call: other })).toMatchObject({ _tag: "Deny" })
      }).pipe(withFileHooks(dirs))
    }).pipe(Effect.scoped))

  it.effect("hooks of a trigger run by priority, then user before project, then name", () =>
    Effect.gen(function*() {
      const dirs = yield* tempDirs
      const log = path.join(dirs.root, "order.log")
      const logger = (name: string, priority: number) => toolHook(name, `cat > /dev/null\necho ${name} >> '${log}'`, { priority })
      yield* writeHook(dirs.project, "c", logger("c", 100))
      yield* writeHook(dirs.project, "b", logger("b", 500))
      yield* writeHook(dirs.user, "d", logger("d", 100))
      yield* writeHook(dirs.user, "a", logger("a", 100))
      yield* writeHook(dirs.user, "z", logger("z", 0))
      const found = yield* FileHooks.discover({ userDir: dirs.user, workDir: dirs.work }).pipe(Effect.provide(NodeServices.layer))
      expect(found.hooks.map((h) => `${h.name}:${h.level}`)).toEqual(["b:project", "a:user", "d:user", "c:project", "z:user"])
      yield* Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        yield* hooks.beforeTool({ context, call: exec({}) })
        expect((yield* hooks.list).map((h) => h.name)).toEqual(["b", "a", "d", "c", "z"])
      }).pipe(withFileHooks(dirs))
      expect((yield* Effect.promise(() => fsp.readFile(log, "utf8"))).split("\n").filter(Boolean)).toEqual(["b", "a", "d", "c", "z"])
    }).pipe(Effect.scoped))

  it.effect("matcher.tool and matcher.pattern filter the calls a hook sees", () =>
    Effect.gen(function*() {
      const dirs = yield* tempDirs
      const log = path.join(dirs.root, "ran.log")
      yield* writeHook(
        dirs.project,
        "no-rm",
        toolHook("no-rm", `cat >> '${log}'\necho >> '${log}'\necho 'destructive' >&2\nexit 2`, {
          matcher: { tool: "^exec$", pattern: "rm\\s+-rf" }
        })
      )
      yield* Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        const readFile = { ...exec({ path: "rm -rf" }), name: "read_file" }
        expect(yield* hooks.beforeTool({ context, call: exec({ cmd: "ls" }) })).toMatchObject({ _tag: "Continue" })
        expect(yield* hooks.beforeTool({ context, call: readFile })).toMatchObject({ _tag: "Continue" })
        expect(yield* hooks.beforeTool({ context, call: exec({ cmd: "rm  -rf /" }) })).toMatchObject({
          _tag: "Deny",
          reason: "destructive"
        })
      }).pipe(withFileHooks(dirs))
      const ran = (yield* Effect.promise(() => fsp.readFile(log, "utf8"))).split("\n").filter(Boolean)
      expect(ran.map((line) => JSON.parse(line).tool_input)).toEqual([{ cmd: "rm  -rf /" }])
    }).pipe(Effect.scoped))

  it.effect("broken HOOK.md files are skipped and reported with path and field; the rest load", () =>
    Effect.gen(function*() {
      const dirs = yield* tempDirs
      const badYaml = yield* writeHook(dirs.user, "bad-yaml", { front: "name: [oops", script: "exit 0" })
      const noTrigger = yield* writeHook(dirs.user, "no-trigger", { front: { name: "no-trigger", description: "d" }, script: "exit 0" })
      const badRegex = yield* writeHook(dirs.project, "bad-regex", toolHook("bad-regex", "exit 0", { matcher: { tool: "(" } }))
      const badPriority = yield* writeHook(dirs.project, "bad-priority", toolHook("bad-priority", "exit 0", { priority: 5000 }))
      const noEntry = yield* writeHook(dirs.project, "no-entry", { front: { name: "no-entry", description: "d", trigger: "post-session" } })
      const notExec = yield* writeHook(dirs.project, "not-exec", { ...toolHook("not-exec", "exit 0"), mode: 0o644 })
      yield* writeHook(dirs.project, "good", toolHook("good", "echo fine >&2\nexit 2"))
      const found = yield* FileHooks.discover({ userDir: dirs.user, workDir: dirs.work }).pipe(Effect.provide(NodeServices.layer))
      expect(found.hooks.map((h) => h.name)).toEqual(["good"])
      expect(found.problems.map((p) => [p.path, p.field])).toEqual([
        [badYaml, "front matter"],
        [noTrigger, "trigger"],
        [badPriority, "priority"],
        [badRegex, "matcher.tool"],
        [noEntry, "scripts/run"],
        [notExec, "scripts/run"]
      ])
      expect(found.problems[0]!.message).toContain("invalid YAML")
      expect(found.problems[3]!.message).toContain("not a valid regular expression")
      yield* Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        expect(yield* hooks.beforeTool({ context, call: exec({}) })).toMatchObject({ _tag: "Deny", reason: "fine" })
      }).pipe(withFileHooks(dirs))
    }).pipe(Effect.scoped))

  it.effect("the entry script is scripts/run, else run.sh, else run.py, and runs only when executable", () =>
    Effect.gen(function*() {
      const dirs = yield* tempDirs
      const all = path.join(dirs.project, "all")
      const sh = path.join(dirs.project, "sh")
      yield* writeHook(dirs.project, "all", toolHook("all", "exit 0"))
      yield* writeHook(dirs.project, "all", { ...toolHook("all", "exit 0"), entry: "run.sh" })
      yield* writeHook(dirs.project, "all", { ...toolHook("all", "exit 0"), entry: "run.py" })
      yield* writeHook(dirs.project, "sh", { ...toolHook("sh", "echo 'from run.sh' >&2\nexit 2"), entry: "run.sh" })
      yield* writeHook(dirs.project, "sh", { ...toolHook("sh", "exit 0"), entry: "run.py" })
      // not executable: never run through an interpreter, reported instead
      const plainSh = yield* writeHook(dirs.project, "plain-sh", { ...toolHook("plain-sh", "exit 2"), entry: "run.sh", mode: 0o644 })
      const plainPy = yield* writeHook(dirs.project, "plain-py", { ...toolHook("plain-py", "exit 2"), entry: "run.py", mode: 0o644 })
      const found = yield* FileHooks.discover({ userDir: dirs.user, workDir: dirs.work }).pipe(Effect.provide(NodeServices.layer))
      expect(found.problems.map((p) => [p.path, p.field])).toEqual([[plainPy, "scripts/run"], [plainSh, "scripts/run"]])
      expect(found.problems[0]!.message).toMatch(/run\.py is not executable; hook scripts run only when executable/)
      expect(Object.fromEntries(found.hooks.map((h) => [h.name, h.command]))).toEqual({
        all: [path.join(all, "scripts", "run")],
        sh: [path.join(sh, "scripts", "run.sh")]
      })
      yield* Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        expect(yield* hooks.beforeTool({ context, call: exec({}) })).toMatchObject({ _tag: "Deny", reason: "from run.sh" })
      }).pipe(withFileHooks(dirs))
    }).pipe(Effect.scoped))

  it.effect("project: false leaves the workspace's hooks unread; the user's still load", () =>
    Effect.gen(function*() {
      const dirs = yield* tempDirs
      yield* writeHook(dirs.user, "mine", toolHook("mine", "exit 0"))
      yield* writeHook(dirs.project, "theirs", toolHook("theirs", "exit 2"))
      yield* writeHook(dirs.project, "broken", { front: "name: broken" })
      const found = yield* FileHooks.discover({ userDir: dirs.user, workDir: dirs.work, project: false }).pipe(Effect.provide(NodeServices.layer))
      expect(found.hooks.map((h) => h.name)).toEqual(["mine"])
      expect(found.problems).toEqual([])
    }).pipe(Effect.scoped))

  it.effect("an async hook runs detached: it never blocks, and reports its own failure", () =>
    Effect.gen(function*() {
      const dirs = yield* tempDirs
      const ready = yield* fifo(dirs, "ready")
      yield* writeHook(
        dirs.project,
        "audit",
        toolHook("audit", `cat > /dev/null\necho $$ > '${ready}'\nexec sleep 1000`, { async: true, timeout: 1000 })
      )
      yield* writeHook(dirs.project, "block-async", toolHook("block-async", "exit 2", { async: true }))
      yield* Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        const sub = yield* (yield* EventBus).subscribe({ capacity: 64, kinds: ["Error"] })
        expect(yield* hooks.beforeTool({ context, call: exec({ cmd: "ls" }) })).toEqual({ _tag: "Continue", arguments: { cmd: "ls" } })
        const pid = Number(yield* readFifo(ready))
        expect(isAlive(pid)).toBe(true)
        yield* TestClock.adjust(1000)
        expect(yield* sub.take).toMatchObject({ stage: "beforeTool", hook: "audit", message: "beforeTool failed: timed out after 1000ms" })
        expect(isAlive(pid)).toBe(false)
      }).pipe(withFileHooks(dirs))
    }).pipe(Effect.scoped))

  it.effect("triggers map to their points: stop gate blocks with feedback, compaction aborts, sessions block", () =>
    Effect.gen(function*() {
      const dirs = yield* tempDirs
      const seen = path.join(dirs.root, "stop.json")
      const front = (name: string, trigger: string) => ({ name, description: name, trigger })
      yield* writeHook(dirs.project, "gate", { front: front("gate", "pre-agent-turn-stop"), script: `cat > '${seen}'\necho 'add tests first' >&2\nexit 2` })
      yield* writeHook(dirs.project, "keep", { front: front("keep", "pre-context-compact"), script: "echo 'keep history' >&2\nexit 2" })
      yield* writeHook(dirs.project, "closed", { front: front("closed", "pre-session"), script: "echo '{\"decision\": \"deny\", \"reason\": \"closed\"}'" })
      yield* writeHook(dirs.project, "turns", { front: front("turns", "pre-agent-turn"), script: "exit 2" })
      yield* Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        expect(yield* hooks.beforeStop({ context, finalMessage: Message.assistant("done"), stopHookActive: true })).toEqual({
          _tag: "Block",
          reason: "add tests first",
          hook: "gate"
        })
        expect(yield* hooks.beforeCompact({ context, reason: "overflow", messages: [] })).toMatchObject({
          _tag: "AbortTurn",
          reason: "keep history"
        })
        expect(yield* hooks.sessionStart({ sessionKey: "s1" })).toMatchObject({ _tag: "Block", reason: "closed" })
        expect(yield* hooks.beforeTurn({ context, input: "hi", messages: [], systemPrompt: undefined })).toMatchObject({
          _tag: "Block",
          reason: "blocked by hook turns"
        })
      }).pipe(withFileHooks(dirs))
      expect(JSON.parse(yield* Effect.promise(() => fsp.readFile(seen, "utf8")))).toMatchObject({
        event_type: "pre-agent-turn-stop",
        stop_hook_active: true,
        last_message: "done"
      })
    }).pipe(Effect.scoped))

  it.effect("post-agent-turn runs after every turn, post-agent-turn-stop only after a completed one", () =>
    Effect.gen(function*() {
      const dirs = yield* tempDirs
      const log = path.join(dirs.root, "after.log")
      const front = (name: string, trigger: string) => ({ name, description: name, trigger })
      yield* writeHook(dirs.project, "any", { front: front("any", "post-agent-turn"), script: `echo any >> '${log}'` })
      yield* writeHook(dirs.project, "stop", { front: front("stop", "post-agent-turn-stop"), script: `echo stop >> '${log}'` })
      yield* Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        const result = (status: Turn.TurnStatus): Turn.TurnResult => ({
          turnId: "t1",
          sessionKey: "s1",
          status,
          messages: [],
          followUps: [],
          iterations: 1,
          usage: { inputTokens: 0, outputTokens: 0 }
        })
        yield* hooks.afterTurn({ context, result: result("failed") })
        yield* hooks.afterTurn({ context, result: result("completed") })
      }).pipe(withFileHooks(dirs))
      const lines = (yield* Effect.promise(() => fsp.readFile(log, "utf8"))).trim().split("\n")
      expect(lines).toEqual(["any", "any", "stop"])
    }).pipe(Effect.scoped))

  it("default directories follow XDG_CONFIG_HOME and the work dir", () => {
    const saved = process.env["XDG_CONFIG_HOME"]
    process.env["XDG_CONFIG_HOME"] = "/xdg"
    try {
      expect(FileHooks.resolveDirs({ workDir: "/w" })).toEqual({
        workDir: "/w",
        userDir: "/xdg/agents/hooks",
        projectDir: "/w/.agents/hooks"
      })
      delete process.env["XDG_CONFIG_HOME"]
      expect(FileHooks.resolveDirs({ workDir: "/w" }).userDir).toBe(path.join(os.homedir(), ".config", "agents", "hooks"))
    } finally {
      if (saved === undefined) delete process.env["XDG_CONFIG_HOME"]
      else process.env["XDG_CONFIG_HOME"] = saved
    }
  })
})
