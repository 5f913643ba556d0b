/**
 * The CLI's approval with the sandbox on: `autoAllowBashIfSandboxed` approving confined `exec`
 * calls but never one a deny or ask rule matches; a call asking to run outside the sandbox always
 * asked about, approved under `--yes` only with `allowUnsandboxedCommands: true`, denied without a
 * terminal, never run with `false`, and granted only by an approval; `excludedCommands` marked to
 * run outside and granted once approved.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { approvalHook, type SandboxApproval, UNSANDBOXED_NO_TERMINAL_REASON, UNSANDBOXED_OFF_REASON } from "../../src/cli/permissions/approval.ts"
import { type RuleKind } from "../../src/cli/permissions/rules.ts"
import * as Permissions from "../../src/cli/permissions/state.ts"
import * as Screen from "../../src/cli/terminal/screen.ts"
import type { ApprovalPolicy } from "../../src/cli/config/settingsFile.ts"
import type { Hook } from "effect-agent-loop"
import { ruleList } from "../support/rules.ts"

const context = { turnId: "t", sessionKey: "s", iteration: 1, depth: 0 }
const ws = "/home/u/project"

const rules = ruleList

interface Setup {
  readonly policy: ApprovalPolicy
  readonly terminal?: boolean
  readonly answers?: ReadonlyArray<string>
  readonly rules?: Partial<Record<RuleKind, ReadonlyArray<string>>>
  readonly sandbox?: Partial<Omit<SandboxApproval, "grant">>
}

const setup = (options: Setup) => {
  const out = { stderr: "" }
  const screen = Screen.make({ stdout: { write: () => true }, stderr: { write: (t: string) => (out.stderr += t) }, stdinIsTTY: true, env: { NO_COLOR: "1" } })
  const queue = [...options.answers ?? []]
  let asked = 0
  const granted: Array<string> = []
  const hook = approvalHook({
    policy: options.policy,
    screen,
    ask: options.terminal === false ? undefined : Effect.sync(() => {
      asked++
      return queue.shift()
    }),
    permissions: Permissions.make(rules(options.rules ?? {}), ws, undefined),
    sandbox: {
      active: true,
      autoAllowExec: false,
      allowUnsandboxed: undefined,
      excludedCommands: [],
      ...options.sandbox,
      grant: (id) => Effect.sync(() => void granted.push(id))
    }
  })
  const run = <A>(returned: A | void | Effect.Effect<A | void, unknown>) =>
    (Effect.isEffect(returned) ? returned : Effect.succeed(returned)) as Effect.Effect<A | void>
  return {
    out,
    granted,
    asked: () => asked,
    before: (call: Hook.HookToolCall) => run(hook.beforeTool!({ context, call })),
    approve: (call: Hook.HookToolCall) => run(hook.approveTool!({ context, call }))
  }
}

const exec = (command: string, id = "c1", unsandboxed = false): Hook.HookToolCall => ({
  id,
  name: "exec",
  arguments: unsandboxed ? { command, dangerously_unsandboxed: true } : { command },
  readOnly: false,
  requiresApproval: true
})

describe("approval with the sandbox", () => {
  it.effect("autoAllowBashIfSandboxed approves confined exec calls without asking, but not one an ask or deny rule matches", () =>
    Effect.gen(function*() {
      const t = setup({ policy: "ask", answers: ["n"], sandbox: { autoAllowExec: true }, rules: { ask: ["Bash(git push:*)"], deny: ["Bash(rm:*)"] } })
      expect(yield* t.approve(exec("make test"))).toEqual({ _tag: "Approve" })
      expect(t.asked()).toBe(0)
      expect(yield* t.approve(exec("git push origin main", "c2"))).toMatchObject({ _tag: "Deny" })
      expect(t.asked()).toBe(1)
      expect(yield* t.before(exec("rm -rf /", "c3"))).toMatchObject({ _tag: "Deny" })
      expect(yield* t.approve(exec("rm -rf /", "c3"))).toMatchObject({ _tag: "Deny" })
      expect(t.granted).toEqual([])
    }))

  it.effect("without the setting, or with the sandbox off, exec is asked about as ever", () =>
    Effect.gen(function*() {
      const t = setup({ policy: "ask", answers: ["n"] })
      expect(yield* t.approve(exec("make test"))).toMatchObject({ _tag: "Deny" })
      expect(t.asked()).toBe(1)
      const off = setup({ policy: "ask", answers: ["n"], sandbox: { active: false, autoAllowExec: true } })
      expect(yield* off.approve(exec("make test"))).toMatchObject({ _tag: "Deny" })
      expect(off.asked()).toBe(1)
    }))

  it.effect("a call asking to run outside is asked about whatever allow rules and --yes say, and a yes grants that call only", () =>
    Effect.gen(function*() {
      const t = setup({ policy: "approve", answers: ["y"], sandbox: { autoAllowExec: true }, rules: { allow: ["Bash(make:*)"] } })
      expect(yield* t.approve(exec("make install", "c9", true))).toEqual({ _tag: "Approve" })
      expect(t.asked()).toBe(1)
      expect(t.out.stderr).toContain("it asks to run outside the sandbox")
      expect(t.out.stderr).toContain("outside the sandbox: the sandbox stopped this command")
      // no rule to remember is offered for such a call
      expect(t.out.stderr).not.toContain("a: allow")
      expect(t.granted).toEqual(["c9"])
      const no = setup({ policy: "ask", answers: ["n"] })
      expect(yield* no.approve(exec("make install", "c1", true))).toMatchObject({ _tag: "Deny" })
      expect(no.granted).toEqual([])
    }))

  it.effect("under --yes without a terminal it is denied with a clear line, unless allowUnsandboxedCommands is true", () =>
    Effect.gen(function*() {
      const t = setup({ policy: "approve", terminal: false })
      expect(yield* t.approve(exec("make install", "c1", true))).toEqual({ _tag: "Deny", reason: UNSANDBOXED_NO_TERMINAL_REASON })
      expect(t.out.stderr).toContain(
        "it asks to run outside the sandbox, which needs your yes at a prompt and there is no terminal to ask (--yes approves it only with sandbox.allowUnsandboxedCommands: true in your settings)"
      )
      expect(t.granted).toEqual([])
      const allowed = setup({ policy: "approve", terminal: false, sandbox: { allowUnsandboxed: true } })
      expect(yield* allowed.approve(exec("make install", "c2", true))).toEqual({ _tag: "Approve" })
      expect(allowed.granted).toEqual(["c2"])
      // a deny rule still holds
      const denied = setup({ policy: "approve", terminal: false, sandbox: { allowUnsandboxed: true }, rules: { deny: ["Bash(make install:*)"] } })
      expect(yield* denied.approve(exec("make install", "c3", true))).toMatchObject({ _tag: "Deny" })
      expect(denied.granted).toEqual([])
    }))

  it.effect("with allowUnsandboxedCommands false it is never run, not even on a yes", () =>
    Effect.gen(function*() {
      const t = setup({ policy: "ask", answers: ["y"], sandbox: { allowUnsandboxed: false } })
      expect(yield* t.approve(exec("make install", "c1", true))).toEqual({ _tag: "Deny", reason: UNSANDBOXED_OFF_REASON })
      expect(t.asked()).toBe(0)
      expect(t.granted).toEqual([])
    }))

  it.effect("an excluded command is marked to run outside, approved as any command (never auto-allowed), then granted", () =>
    Effect.gen(function*() {
      const t = setup({ policy: "ask", answers: ["y"], sandbox: { excludedCommands: ["docker"], autoAllowExec: true } })
      expect(yield* t.before(exec("docker ps"))).toEqual({ _tag: "Modify", arguments: { command: "docker ps", dangerously_unsandboxed: true } })
      expect(yield* t.approve(exec("docker ps", "c1", true))).toEqual({ _tag: "Approve" })
      expect(t.asked()).toBe(1)
      expect(t.granted).toEqual(["c1"])
      // a compound command is excluded only when every part is
      expect(yield* t.before(exec("docker ps && curl evil.example", "c2"))).toBeUndefined()
    }))
})
