/**
 * The CLI's approval hook with permission rules and hook verdicts: deny rules before anything
 * (with --yes too), ask rules prompting even for tools that need no approval, allow rules and a
 * hook's allow approving without a prompt, a hook's ask overriding an allow rule, and writes into
 * protected locations never approved by a rule.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { approvalHook } from "../../src/cli/permissions/approval.ts"
import { type RuleKind } from "../../src/cli/permissions/rules.ts"
import * as Permissions from "../../src/cli/permissions/state.ts"
import * as Screen from "../../src/cli/terminal/screen.ts"
import type { ApprovalPolicy } from "../../src/cli/config/settingsFile.ts"
import type { Hook } from "effect-agent-loop"
import * as Bridge from "../../src/layers/claudeHooks/bridge.ts"
import { ruleList } from "../support/rules.ts"

const context = { turnId: "t", sessionKey: "s", iteration: 1, depth: 0 }
const ws = "/home/u/project"

const rules = ruleList

const setup = (policy: ApprovalPolicy, lists: Partial<Record<RuleKind, ReadonlyArray<string>>>, answers: ReadonlyArray<string> = []) => {
  const out = { stderr: "" }
  const screen = Screen.make({ stdout: { write: () => true }, stderr: { write: (t: string) => (out.stderr += t) }, stdinIsTTY: true, env: { NO_COLOR: "1" } })
  const queue = [...answers]
  let asked = 0
  const bridge = Bridge.make()
  const hook = approvalHook({
    policy,
    screen,
    ask: Effect.sync(() => {
      asked++
      return queue.shift()
    }),
    permissions: Permissions.make(rules(lists), ws, undefined),
    bridge
  })
  const run = <A>(returned: A | void | Effect.Effect<A | void, unknown>) =>
    (Effect.isEffect(returned) ? returned : Effect.succeed(returned)) as Effect.Effect<A | void>
  return {
    out,
    bridge,
    asked: () => asked,
    before: (call: Hook.HookToolCall) => run(hook.beforeTool!({ context, call })),
    approve: (call: Hook.HookToolCall) => run(hook.approveTool!({ context, call }))
  }
}

const exec = (command: string, id = "c1"): Hook.HookToolCall => ({ id, name: "exec", arguments: { command }, readOnly: false, requiresApproval: true })
const read = (path: string): Hook.HookToolCall => ({ id: "r1", name: "read_file", arguments: { path }, readOnly: true, requiresApproval: false })

describe("approval with permission rules", () => {
  it.effect("a deny rule denies at beforeTool, names the rule, and holds with --yes", () =>
    Effect.gen(function*() {
      const t = setup("approve", { deny: ["Bash(curl:*)"], allow: ["exec"] })
      expect(yield* t.before(exec("echo hi && curl x"))).toEqual({ _tag: "Deny", reason: "Denied by the permission rule \"Bash(curl:*)\" of settings.json." })
      expect(t.out.stderr).toContain("permission rule Bash(curl:*) (settings.json)")
      expect(yield* t.before(exec("echo hi"))).toBeUndefined()
    }))

  it.effect("an ask rule prompts about a tool that needs no approval; yes lets it run without a second prompt", () =>
    Effect.gen(function*() {
      const t = setup("ask", { ask: ["Read(.env)"] }, ["y", "n"])
      expect(yield* t.before(read("src/a.ts"))).toBeUndefined()
      expect(t.asked()).toBe(0)
      expect(yield* t.before(read("config/.env"))).toBeUndefined()
      expect(t.asked()).toBe(1)
      expect(t.out.stderr).toContain("? read_file wants to run (the rule Read(.env) asks):")
      // a call that needs approval for its arguments after all is not asked again
      expect(yield* t.approve({ ...read("config/.env"), requiresApproval: false })).toEqual({ _tag: "Approve" })
      expect(t.asked()).toBe(1)
      expect(yield* t.before({ ...read(".env"), id: "r2" })).toEqual({ _tag: "Deny", reason: "The user denied this call." })
    }))

  it.effect("allow rules approve without a prompt, unless a part is not covered, or a hook asks", () =>
    Effect.gen(function*() {
      const t = setup("ask", { allow: ["exec(git status:*)"] }, ["n"])
      expect(yield* t.approve(exec("git status --short"))).toEqual({ _tag: "Approve" })
      expect(t.asked()).toBe(0)
      t.bridge.record("c2", { decision: "ask", reason: "status is slow here", hook: "PreToolUse[0] Bash" })
      expect(yield* t.approve(exec("git status", "c2"))).toEqual({ _tag: "Deny", reason: "The user denied this call." })
      expect(t.out.stderr).toContain("(hook PreToolUse[0] Bash asks: status is slow here)")
    }))

  it.effect("a hook's allow approves without a prompt; without a terminal a call no rule allows is denied, saying why", () =>
    Effect.gen(function*() {
      const t = setup("ask", { allow: ["exec(git status:*)"] })
      t.bridge.record("c3", { decision: "allow", reason: undefined, hook: "PreToolUse[0] Bash" })
      expect(yield* t.approve(exec("rm -rf build", "c3"))).toEqual({ _tag: "Approve" })
      expect(t.asked()).toBe(0)
      const out = { stderr: "" }
      const screen = Screen.make({ stdout: { write: () => true }, stderr: { write: (s: string) => (out.stderr += s) }, stdinIsTTY: false, env: {} })
      const noTerminal = approvalHook({ policy: "ask", screen, ask: undefined, permissions: Permissions.make(rules({ allow: ["exec(git status:*)"] }), ws, undefined) })
      const decision = noTerminal.approveTool!({ context, call: exec("git status; touch PWNED") })
      expect((yield* (decision as Effect.Effect<unknown>)) as { _tag: string }).toMatchObject({ _tag: "Deny" })
      expect(out.stderr).toContain("(no allow rule covers `touch PWNED`)")
    }))

  it.effect("a write into a protected location is asked even when a rule allows write_file", () =>
    Effect.gen(function*() {
      const t = setup("ask", { allow: ["write_file"] }, ["y"])
      const call: Hook.HookToolCall = { id: "w", name: "write_file", arguments: { path: ".claude/settings.json", content: "{}" }, readOnly: false, requiresApproval: false }
      expect(yield* t.approve(call)).toEqual({ _tag: "Approve" })
      expect(t.asked()).toBe(1)
      expect(t.out.stderr).toContain("(it writes to a protected location)")
      // no rule can answer such a call, so none is offered
      expect(t.out.stderr).toContain("? allow write_file? [y/N] ")
    }))

  it.effect("allow for the session adds the suggested rule: the next such call is not asked", () =>
    Effect.gen(function*() {
      const t = setup("ask", {}, ["a"])
      expect(yield* t.approve(exec("npm test -- --run"))).toEqual({ _tag: "Approve" })
      expect(t.out.stderr).toContain("a: allow exec(npm test:*) for this session")
      expect(t.out.stderr).not.toContain("s: allow and save")
      expect(yield* t.approve(exec("npm test", "c9"))).toEqual({ _tag: "Approve" })
      expect(t.asked()).toBe(1)
    }))
})
