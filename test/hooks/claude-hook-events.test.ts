/**
 * Claude Code hooks, every event and how groups combine (the adapter layer over the real hooks
 * runner and real `sh -c` commands, which log what they receive): all matching groups run at
 * once and deny wins, PostToolUseFailure, PermissionRequest, SubagentStart, PostCompact, SessionStart after a compaction, a Stop
 * hook's continuation told to the screen's listener, `http` hooks against a loopback server, and
 * `transcript_path` naming a transcript in Claude Code's shape that is current when a hook runs.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { EventBus, EventBusLive as EventBusLayer, type Hook, Hooks, HooksLive as HooksLayer, LoopConfigLive, Message } from "effect-agent-loop"
import * as AgentEvent from "../../src/domain/Event.ts"
import * as Bridge from "../../src/layers/claudeHooks/bridge.ts"
import type { HooksConfig } from "../../src/layers/claudeHooks/config.ts"
import * as ClaudeHooks from "../../src/layers/claudeHooks/layer.ts"
import { tempDir } from "../support/cliProcess.ts"
import { points } from "../support/hooksRunner.ts"

const context: Hook.HookContext = { turnId: "t1", sessionKey: "s1", iteration: 1, depth: 0 }
const call = (name: string, args: unknown, id = "call-1"): Hook.HookToolCall => ({ id, name, arguments: args, readOnly: false, requiresApproval: true })
const command = (text: string, timeout?: number) => ({ type: "command", command: text, ...(timeout === undefined ? {} : { timeout }) })

/** Runs `body` with `hooks` registered for a fresh project directory (transcripts kept in it). */
const withHooks = (
  hooks: HooksConfig,
  body: (dir: string, bridge: Bridge.Bridge) => Effect.Effect<void, never, Hooks | EventBus>
) => {
  const dir = fs.realpathSync(tempDir())
  const bridge = Bridge.make()
  return body(dir, bridge).pipe(
    Effect.provide(
      ClaudeHooks.layer({ sources: [{ source: "settings.json", hooks }], projectDir: dir, bridge, transcriptDir: path.join(dir, "transcripts") }).pipe(
        Layer.provideMerge(HooksLayer.layer),
        Layer.provideMerge(EventBusLayer.layer),
        Layer.provideMerge(LoopConfigLive.layer({ model: "m" })),
        Layer.provideMerge(NodeServices.layer)
      )
    )
  )
}

/** The JSON lines a hook logged into `file` of the project. */
const logged = (dir: string, file: string): Array<Record<string, unknown>> =>
  fs.readFileSync(path.join(dir, file), "utf8").trim().split("\n").map((line) => JSON.parse(line))

describe("Claude Code hook events", () => {
  // live: run one after another, the two groups below would wait on each other until their timeouts
  it.live("every matching group runs at once, and a deny by any wins over an allow", () =>
    withHooks({
      PreToolUse: [
        // each waits for the other's pipe: only groups run at once get past it
        { matcher: "Bash", hooks: [command("cat > /dev/null; echo a > \"$CLAUDE_PROJECT_DIR/one\"; read x < \"$CLAUDE_PROJECT_DIR/two\"; echo 'not today' >&2; exit 2", 20)] },
        { matcher: "Bash|Write", hooks: [command("cat > /dev/null; read x < \"$CLAUDE_PROJECT_DIR/one\"; echo b > \"$CLAUDE_PROJECT_DIR/two\"; echo '{\"hookSpecificOutput\":{\"permissionDecision\":\"allow\"}}'", 20)] },
        { matcher: ".*", hooks: [command("cat >> \"$CLAUDE_PROJECT_DIR/all.log\"; echo >> \"$CLAUDE_PROJECT_DIR/all.log\"")] }
      ]
    }, (dir) =>
      Effect.gen(function*() {
        execFileSync("mkfifo", [path.join(dir, "one"), path.join(dir, "two")])
        const hooks = points(yield* Hooks)
        const started = Date.now()
        expect(yield* hooks.beforeTool({ context, call: call("exec", { command: "ls" }) })).toMatchObject({ _tag: "Deny", reason: "not today" })
        expect(Date.now() - started).toBeLessThan(15_000)
        // the group after the denying one ran too
        expect(logged(dir, "all.log")).toMatchObject([{ hook_event_name: "PreToolUse", tool_name: "Bash" }])
      })), 60_000)

  it.effect("PostToolUseFailure for a failed call, SubagentStart, PostCompact: each given Claude Code's input", () =>
    withHooks({
      PostToolUse: [{ hooks: [command("cat >> \"$CLAUDE_PROJECT_DIR/post.log\"; echo >> \"$CLAUDE_PROJECT_DIR/post.log\"")] }],
      PostToolUseFailure: [{ matcher: "Bash", hooks: [command("cat >> \"$CLAUDE_PROJECT_DIR/failure.log\"; echo >> \"$CLAUDE_PROJECT_DIR/failure.log\"; echo '{\"hookSpecificOutput\":{\"additionalContext\":\"try make\"}}'")] }],
      SubagentStart: [{ hooks: [command("cat > \"$CLAUDE_PROJECT_DIR/start.json\"")] }],
      PostCompact: [{ matcher: "auto", hooks: [command("cat > \"$CLAUDE_PROJECT_DIR/compact.json\"")] }]
    }, (dir) =>
      Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        const failed = yield* hooks.afterTool({ context, call: call("exec", { command: "mak" }), result: { content: "sh: mak: not found", isError: true }, failed: true })
        expect(failed.content).toBe("sh: mak: not found\n\n<post-tool-use-hook>\ntry make\n</post-tool-use-hook>")
        expect(logged(dir, "failure.log")).toMatchObject([{ hook_event_name: "PostToolUseFailure", tool_name: "Bash", tool_input: { command: "mak" }, error: "sh: mak: not found" }])
        expect(fs.existsSync(path.join(dir, "post.log"))).toBe(false)
        yield* hooks.afterTool({ context, call: call("grep", { pattern: "x" }), result: { content: "a.ts:1: x", isError: false }, failed: false })
        expect(logged(dir, "post.log")).toMatchObject([{ hook_event_name: "PostToolUse", tool_name: "Grep", tool_response: "a.ts:1: x" }])
        const subTurn = { childTurnId: "child-1", model: "m", prompt: "find the bug", async: false, critical: false }
        expect(yield* hooks.beforeSubTurn({ context, subTurn })).toEqual({ _tag: "Continue" })
        expect(JSON.parse(fs.readFileSync(path.join(dir, "start.json"), "utf8"))).toMatchObject({ hook_event_name: "SubagentStart", agent_id: "child-1", session_id: "s1" })
        yield* hooks.afterCompact({ context, reason: "budget", dropped: 4, remaining: 2 })
        expect(JSON.parse(fs.readFileSync(path.join(dir, "compact.json"), "utf8"))).toMatchObject({ hook_event_name: "PostCompact", trigger: "auto" })
      })))

  it.effect("after a compaction, SessionStart hooks matching compact run with source compact, and their context reaches the next turn", () =>
    withHooks({
      SessionStart: [
        { matcher: "compact", hooks: [command("cat > \"$CLAUDE_PROJECT_DIR/start.json\"; echo 'the summary dropped the plan: re-read PLAN.md'")] },
        { matcher: "startup", hooks: [command("echo started >> \"$CLAUDE_PROJECT_DIR/startup.log\"")] }
      ]
    }, (dir) =>
      Effect.gen(function*() {
        const hooks = points(yield* Hooks)
        yield* hooks.afterCompact({ context, reason: "summary", dropped: 6, remaining: 0 })
        expect(JSON.parse(fs.readFileSync(path.join(dir, "start.json"), "utf8"))).toMatchObject({ hook_event_name: "SessionStart", source: "compact", session_id: "s1" })
        expect(fs.existsSync(path.join(dir, "startup.log"))).toBe(false)
        const turn = { context: { ...context, turnId: "t2" }, input: "go on", messages: [], systemPrompt: undefined }
        expect(yield* hooks.beforeTurn(turn)).toMatchObject({
          _tag: "Continue",
          addMessages: [Message.user("<session-start-hook>\nthe summary dropped the plan: re-read PLAN.md\n</session-start-hook>")]
        })
        // told once
        expect(yield* hooks.beforeTurn(turn)).toMatchObject({ addMessages: [] })
      })))

  it.effect("PermissionRequest answers for the user (deny wins), and a Stop hook's continuation is told to the bridge's listeners", () =>
    withHooks({
      PermissionRequest: [
        { matcher: "Bash", hooks: [command("input=$(cat); printf '%s' \"$input\" > \"$CLAUDE_PROJECT_DIR/request.json\"; printf '%s' \"$input\" | grep -q 'rm -rf' && echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PermissionRequest\",\"decision\":{\"behavior\":\"deny\",\"message\":\"no rm\"}}}' || echo '{\"hookSpecificOutput\":{\"decision\":{\"behavior\":\"allow\"}}}'")] },
        { matcher: "Bash", hooks: [command("echo '{\"hookSpecificOutput\":{\"decision\":{\"behavior\":\"allow\"}}}'")] }
      ],
      Stop: [{ hooks: [command("grep -q '\"stop_hook_active\":true' || { echo 'run the tests first' >&2; exit 2; }")] }]
    }, (dir, bridge) =>
      Effect.gen(function*() {
        expect(yield* bridge.permissionRequest(context, call("exec", { command: "ls" }))).toMatchObject({ decision: "allow" })
        expect(JSON.parse(fs.readFileSync(path.join(dir, "request.json"), "utf8"))).toMatchObject({
          hook_event_name: "PermissionRequest",
          tool_name: "Bash",
          tool_input: { command: "ls" }
        })
        expect(yield* bridge.permissionRequest(context, call("exec", { command: "rm -rf x" }))).toEqual({ decision: "deny", reason: "no rm", hook: "PermissionRequest[0] Bash" })
        expect(yield* bridge.permissionRequest(context, call("read_file", { path: "a" }))).toBeUndefined()
        const told: Array<string> = []
        bridge.onContinued((_context, reason) => Effect.sync(() => told.push(reason)))
        const hooks = points(yield* Hooks)
        const finalMessage = Message.assistant("done")
        expect(yield* hooks.beforeStop({ context, finalMessage, stopHookActive: false })).toMatchObject({ _tag: "Block", reason: "run the tests first" })
        expect(yield* hooks.beforeStop({ context, finalMessage, stopHookActive: true })).toEqual({ _tag: "Continue" })
        expect(told).toEqual(["run the tests first"])
      })))

  it.live("http hooks: the event POSTed as JSON with the configured headers, the reply read as a command's output", () =>
    Effect.gen(function*() {
      const received: Array<{ readonly body: string; readonly auth: string | undefined }> = []
      const server = http.createServer((request, response) => {
        let body = ""
        request.on("data", (chunk) => (body += chunk))
        request.on("end", () => {
          received.push({ body, auth: request.headers["authorization"] })
          if (request.url === "/broken") {
            response.writeHead(500).end("down")
            return
          }
          response.writeHead(200, { "content-type": "application/json" })
          response.end(JSON.stringify({ hookSpecificOutput: { permissionDecision: "deny", permissionDecisionReason: "policy server says no" } }))
        })
      })
      yield* Effect.acquireRelease(
        Effect.callback<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void))),
        () => Effect.sync(() => server.close())
      )
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      yield* withHooks({
        PreToolUse: [
          { matcher: "Write", hooks: [{ type: "http", url: `${url}/hook`, headers: { Authorization: "Bearer test-token" } }] },
          { matcher: "Bash", hooks: [{ type: "http", url: `${url}/broken`, timeout: 5 }] }
        ]
      }, () =>
        Effect.gen(function*() {
          const hooks = points(yield* Hooks)
          expect(yield* hooks.beforeTool({ context, call: call("write_file", { path: "a.txt", content: "x" }) })).toMatchObject({
            _tag: "Deny",
            reason: "policy server says no"
          })
          expect(received[0]!.auth).toBe("Bearer test-token")
          expect(JSON.parse(received[0]!.body)).toMatchObject({ hook_event_name: "PreToolUse", tool_name: "Write", tool_input: { content: "x" } })
          // a failing endpoint is a non-blocking error: the call goes on, an Error event says so
          const errors = yield* (yield* EventBus).subscribe({ capacity: 8, kinds: ["Error"] })
          expect(yield* hooks.beforeTool({ context, call: call("exec", { command: "ls" }) })).toMatchObject({ _tag: "Continue" })
          expect(yield* errors.take).toMatchObject({ message: expect.stringContaining("POST") })
        }).pipe(Effect.scoped))
    }).pipe(Effect.scoped), 60_000)

  it.effect("transcript_path names a transcript in Claude Code's JSON Lines shape, current when the hook runs", () =>
    withHooks({
      PreToolUse: [{ matcher: "Bash", hooks: [command("path=$(sed -n 's/.*\"transcript_path\":\"\\([^\"]*\\)\".*/\\1/p'); cp \"$path\" \"$CLAUDE_PROJECT_DIR/seen.jsonl\"")] }]
    }, (dir) =>
      Effect.gen(function*() {
        const bus = yield* EventBus
        yield* bus.publish(AgentEvent.make("TurnStart", context, 1_000, { input: "list the files" }))
        const toolCalls = [{ id: "call-1", name: "exec", arguments: JSON.stringify({ command: "ls" }) }]
        const usage = { inputTokens: 1, outputTokens: 1 }
        yield* bus.publish(AgentEvent.make("LLMResponse", context, 1_001, { model: "m", content: "Looking.", toolCalls, finishReason: "tool_calls", usage, durationMs: 1 }))
        const hooks = points(yield* Hooks)
        yield* hooks.beforeTool({ context, call: call("exec", { command: "ls" }) })
        const lines = logged(dir, "seen.jsonl")
        expect(lines).toMatchObject([
          { type: "user", sessionId: "s1", parentUuid: null, cwd: dir, message: { role: "user", content: "list the files" } },
          {
            type: "assistant",
            parentUuid: lines[0]!["uuid"],
            message: { role: "assistant", content: [{ type: "text", text: "Looking." }, { type: "tool_use", id: "call-1", name: "Bash", input: { command: "ls" } }] }
          }
        ])
        expect(fs.statSync(path.join(dir, "transcripts")).mode & 0o777).toBe(0o700)
      })))
})
