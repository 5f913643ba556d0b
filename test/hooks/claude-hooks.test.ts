/**
 * Claude Code hooks on the loop's hook points (the adapter layer alone, over the real hooks
 * runner and real `sh -c` commands): matchers with Claude Code's tool names, the JSON on stdin,
 * the outcomes of exit codes and JSON replies, the approval bridge, and timeouts on the Clock.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { EventBus, EventBusLive as EventBusLayer, type Hook, Hooks, HooksLive as HooksLayer, LoopConfigLive, Message, Secrets } from "effect-agent-loop"
import * as Bridge from "../../src/layers/claudeHooks/bridge.ts"
import type { HooksConfig } from "../../src/layers/claudeHooks/config.ts"
import { fromClaudeInput, toClaudeInput } from "../../src/layers/claudeHooks/io.ts"
import * as ClaudeHooks from "../../src/layers/claudeHooks/layer.ts"
import { tempDir } from "../support/cliProcess.ts"
import { points } from "../support/hooksRunner.ts"

const context: Hook.HookContext = { turnId: "t1", sessionKey: "s1", iteration: 1, depth: 0 }
const call = (name: string, args: unknown, id = "call-1"): Hook.HookToolCall => ({ id, name, arguments: args, readOnly: false, requiresApproval: true })

/** Runs `body` with `hooks` registered for a fresh project directory; the bridge is shared. */
const withHooks = (hooks: HooksConfig, body: (dir: string, bridge: Bridge.Bridge) => Effect.Effect<void, never, Hooks | EventBus>) => {
  const dir = fs.realpathSync(tempDir())
  const bridge = Bridge.make()
  return body(dir, bridge).pipe(
    Effect.provide(
      ClaudeHooks.layer({ sources: [{ source: "settings.json", hooks }], projectDir: dir, bridge }).pipe(
        Layer.provideMerge(HooksLayer.layer),
        Layer.provideMerge(EventBusLayer.layer),
        Layer.provideMerge(LoopConfigLive.layer({ model: "m" })),
        Layer.provideMerge(NodeServices.layer)
      )
    )
  )
}

const command = (text: string, timeout?: number) => ({ type: "command", command: text, ...(timeout === undefined ? {} : { timeout }) })

describe("Claude Code hooks", () => {
  it("map tool inputs to Claude Code's field names and back", () => {
    expect(toClaudeInput("edit_file", { path: "src/a.ts", old_text: "a", new_text: "b" }, "/p")).toEqual({ file_path: "/p/src/a.ts", old_string: "a", new_string: "b" })
    expect(toClaudeInput("exec", { command: "ls", timeout_ms: 5 }, "/p")).toEqual({ command: "ls", timeout: 5 })
    expect(fromClaudeInput("write_file", { path: "a", content: "x" }, { file_path: "/p/b/c.ts" }, "/p")).toEqual({ path: "b/c.ts", content: "x" })
    expect(fromClaudeInput("exec", { command: "ls" }, { command: "ls -la" }, "/p")).toEqual({ command: "ls -la" })
  })

  it("the bridge keeps at most MAX_VERDICTS verdicts, the oldest going first, and ask wins over allow", () => {
    const bridge = Bridge.make()
    for (let i = 0; i <= Bridge.MAX_VERDICTS; i++) bridge.record(`c${i}`, { decision: "allow", reason: undefined, hook: "h" })
    expect(bridge.peek("c0")).toBeUndefined()
    expect(bridge.peek("c1")).toBeDefined()
    expect(bridge.peek(`c${Bridge.MAX_VERDICTS}`)).toBeDefined()
    bridge.record("x", { decision: "ask", reason: "careful", hook: "a" })
    bridge.record("x", { decision: "allow", reason: undefined, hook: "b" })
    expect(bridge.take("x")).toEqual({ decision: "ask", reason: "careful", hook: "a" })
    expect(bridge.take("x")).toBeUndefined()
  })

  it.effect("PreToolUse: matchers by Claude Code's names, the event on stdin, exit 2 denies with stderr", () =>
    withHooks({
      PreToolUse: [
        { matcher: "Edit|Write", hooks: [command("cat > \"$CLAUDE_PROJECT_DIR/in.json\"; echo \"$AGENT_LOOP_PROJECT_DIR\" > \"$CLAUDE_PROJECT_DIR/dir\"; echo 'no writes today' >&2; exit 2")] },
        { matcher: "mcp__notes__.*", hooks: [command("echo '{\"hookSpecificOutput\":{\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"notes are read-only\"}}'")] }
      ]
    }, (dir) =>
      Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        expect(yield* hooks.beforeTool({ context, call: call("write_file", { path: "a.txt", content: "x" }) })).toMatchObject({ _tag: "Deny", reason: "no writes today" })
        const input = JSON.parse(fs.readFileSync(path.join(dir, "in.json"), "utf8"))
        expect(input).toEqual({
          session_id: "s1",
          transcript_path: "",
          cwd: dir,
          hook_event_name: "PreToolUse",
          permission_mode: "default",
          tool_name: "Write",
          tool_input: { file_path: path.join(dir, "a.txt"), content: "x" },
          tool_use_id: "call-1"
        })
        expect(fs.readFileSync(path.join(dir, "dir"), "utf8").trim()).toBe(dir)
        expect(yield* hooks.beforeTool({ context, call: call("notes__put", {}) })).toMatchObject({ _tag: "Deny", reason: "notes are read-only" })
        expect(yield* hooks.beforeTool({ context, call: call("exec", { command: "ls" }) })).toEqual({ _tag: "Continue", arguments: { command: "ls" } })
      })))

  it.effect("PreToolUse: allow approves, ask reaches the approver, updatedInput changes the call, continue:false ends the turn", () =>
    withHooks({
      PreToolUse: [{
        matcher: "Bash",
        hooks: [command(`input=$(cat)
case "$input" in
  *'"ls"'*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}' ;;
  *'"git push"'*) echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"pushing"}}' ;;
  *'"rm x"'*) echo '{"hookSpecificOutput":{"updatedInput":{"command":"rm -i x"}}}' ;;
  *) echo '{"continue":false,"stopReason":"enough for today"}' ;;
esac`)]
      }]
    }, (_dir, bridge) =>
      Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        const ls = call("exec", { command: "ls" }, "a")
        yield* hooks.beforeTool({ context, call: ls })
        expect(bridge.peek("a")).toMatchObject({ decision: "allow" })
        expect(yield* hooks.approveTool({ context, call: ls })).toEqual({ _tag: "Approve" })
        yield* hooks.beforeTool({ context, call: call("exec", { command: "git push" }, "b") })
        expect(bridge.take("b")).toEqual({ decision: "ask", reason: "pushing", hook: "PreToolUse[0] Bash" })
        expect(yield* hooks.beforeTool({ context, call: call("exec", { command: "rm x" }) })).toEqual({ _tag: "Continue", arguments: { command: "rm -i x" } })
        expect(yield* hooks.beforeTool({ context, call: call("exec", { command: "other" }) })).toMatchObject({ _tag: "AbortTurn", reason: "enough for today" })
      })))

  it.effect("PostToolUse adds its feedback to the result; UserPromptSubmit adds context or blocks; Stop blocks until stop_hook_active", () =>
    withHooks({
      PostToolUse: [{ hooks: [command("echo '{\"decision\":\"block\",\"reason\":\"lint failed\"}'")] }],
      UserPromptSubmit: [{ hooks: [command("grep -q secret-plan && { echo 'prompts about plans are blocked' >&2; exit 2; }; echo 'today is Tuesday'")] }],
      Stop: [{ hooks: [command("grep -q '\"stop_hook_active\":true' || { echo 'tests first' >&2; exit 2; }")] }],
      SubagentStop: [{ hooks: [command("exit 2")] }]
    }, () =>
      Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        const patched = yield* hooks.afterTool({ context, call: call("grep", { pattern: "x" }), result: { content: "found", isError: false }, failed: false })
        expect(patched.content).toBe("found\n\n<post-tool-use-hook>\nlint failed\n</post-tool-use-hook>")
        const turn = { context, messages: [], systemPrompt: undefined }
        const added = yield* hooks.beforeTurn({ ...turn, input: "hello" })
        expect(added).toMatchObject({ _tag: "Continue", addMessages: [Message.user("<user-prompt-submit-hook>\ntoday is Tuesday\n</user-prompt-submit-hook>")] })
        expect(yield* hooks.beforeTurn({ ...turn, input: "the secret-plan" })).toMatchObject({ _tag: "Block", reason: "prompts about plans are blocked" })
        const finalMessage = Message.assistant("done")
        expect(yield* hooks.beforeStop({ context, finalMessage, stopHookActive: false })).toMatchObject({ _tag: "Block", reason: "tests first" })
        expect(yield* hooks.beforeStop({ context, finalMessage, stopHookActive: true })).toEqual({ _tag: "Continue" })
        // SubagentStop is for sub-turns only
        expect(yield* hooks.beforeStop({ context: { ...context, depth: 1 }, finalMessage, stopHookActive: true })).toMatchObject({ _tag: "Block" })
      })))

  it.effect("SessionStart context joins the session's first turn; Notification runs when the approver asks", () =>
    withHooks({
      SessionStart: [{ matcher: "startup", hooks: [command("echo '{\"hookSpecificOutput\":{\"additionalContext\":\"repo uses pnpm\"}}'")] }],
      Notification: [{ hooks: [command("cat > \"$CLAUDE_PROJECT_DIR/notified.fifo\"")] }]
    }, (dir, bridge) =>
      Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        expect(yield* hooks.sessionStart({ sessionKey: "s1" })).toEqual({ _tag: "Continue" })
        const turn = { context, input: "hi", messages: [], systemPrompt: undefined }
        expect(yield* hooks.beforeTurn(turn)).toMatchObject({ addMessages: [Message.user("<session-start-hook>\nrepo uses pnpm\n</session-start-hook>")] })
        expect(yield* hooks.beforeTurn(turn)).toMatchObject({ addMessages: [] })
        // the notification runs detached: reading the pipe waits until its command has written
        const fifo = path.join(dir, "notified.fifo")
        execFileSync("mkfifo", [fifo])
        yield* bridge.notify(context, "agent-loop needs your permission to use Bash")
        const received = yield* Effect.promise(() => fsp.readFile(fifo, "utf8"))
        expect(JSON.parse(received)).toMatchObject({ hook_event_name: "Notification", message: "agent-loop needs your permission to use Bash" })
      })))

  it.effect("commands never see provider keys nor registered secrets, and what they print is scrubbed", () => {
    process.env["CLAUDE_HOOKS_TEST_API_KEY"] = "sk-provider-key-0123456789"
    process.env["CLAUDE_HOOKS_TEST_TOKEN"] = "registered-secret-0123456789"
    return withHooks({ PreToolUse: [{ hooks: [command("env > \"$CLAUDE_PROJECT_DIR/env.txt\"; echo \"leak [$CLAUDE_HOOKS_TEST_TOKEN] registered-secret-0123456789\" >&2; exit 2")] }] }, (dir) =>
      Effect.gen(function*() {
        const secrets = yield* Secrets
        secrets.add(["registered-secret-0123456789"])
        const hooks = points(yield* Hooks)
        expect(yield* hooks.beforeTool({ context, call: call("exec", { command: "ls" }) })).toMatchObject({ _tag: "Deny", reason: "leak [] <redacted>" })
        const env = fs.readFileSync(path.join(dir, "env.txt"), "utf8")
        expect(env).toContain(`CLAUDE_PROJECT_DIR=${dir}`)
        expect(env).not.toContain("sk-provider-key")
        expect(env).not.toContain("registered-secret")
      })).pipe(Effect.ensuring(Effect.sync(() => {
        delete process.env["CLAUDE_HOOKS_TEST_API_KEY"]
        delete process.env["CLAUDE_HOOKS_TEST_TOKEN"]
      })))
  })

  it.effect("a command past its timeout is killed on the Clock: the call goes on, and an Error event says so", () =>
    withHooks({ PreToolUse: [{ hooks: [command("cat > /dev/null; exec sleep 1000", 2)] }] }, () =>
      Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        const sub = yield* (yield* EventBus).subscribe({ capacity: 64, kinds: ["Error"] })
        const pending = yield* Effect.forkChild(hooks.beforeTool({ context, call: call("exec", { command: "ls" }) }))
        yield* TestClock.adjust(1_999)
        expect(pending.pollUnsafe()).toBeUndefined()
        yield* TestClock.adjust(1)
        expect(yield* Fiber.join(pending)).toEqual({ _tag: "Continue", arguments: { command: "ls" } })
        expect(yield* sub.take).toMatchObject({ stage: "beforeTool", hook: "PreToolUse[0]", message: expect.stringContaining("timed out after 2000ms") })
      }).pipe(Effect.scoped)))
})
