/**
 * Approval of tool calls, by permission rules, hooks and policy.
 *
 * - A `deny` rule denies the call before anything else, whatever the policy (`--yes` included),
 *   and the model is told which rule. For `exec`, deny rules look through wrappers and, where the
 *   rule reader cannot place a command's words, at every word (`permissions/commandRules.ts`).
 * - An `ask` rule, or a `PreToolUse` hook answering `ask`, makes the user be asked about a call,
 *   even of a tool that needs no approval; an `allow` rule or a hook answering `allow` approves
 *   without asking. Allow rules never approve a write into a protected location (that is always
 *   asked), nor an `exec` command the reader is unsure of or one that writes files or runs code
 *   through its options: those fall to the policy below, and `--yes` approves them.
 * - Otherwise the policy decides: `approve` (`--yes`) approves all, `deny` denies all, `ask` asks
 *   on a terminal and denies without one; a denial without asking says why on stderr.
 *
 * - With the sandbox on, `sandbox.autoAllowBashIfSandboxed` approves `exec` calls that run in it
 *   without asking (never one a deny or ask rule or a hook's "ask" matches).
 * - An `exec` call that asks to run outside the sandbox (`dangerously_unsandboxed`, after the
 *   sandbox stopped it) is always asked about, whatever rules or `--yes` say, unless
 *   `sandbox.allowUnsandboxedCommands` is `true` and the policy approves; without a terminal it is
 *   denied, saying so, and with `allowUnsandboxedCommands: false` it is never run. Only an
 *   approval here grants it (`Sandbox.grantUnsandboxed`); the model cannot.
 * - A command of `sandbox.excludedCommands` (every part of it) is approved as any command is, and
 *   then runs outside the sandbox.
 *
 * The prompt shows the whole call (see `approvalDisplay.ts`) and offers: allow once, allow the
 * suggested rule for the session, allow and save it to the workspace's settings, or deny (an
 * answer `n REASON` passes the reason to the model). The loop denies on its own when nobody
 * answers within `approvalTimeout`.
 */
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Hook from "../../domain/Hook.ts"
import { type Bridge, MAX_VERDICTS } from "../../layers/claudeHooks/bridge.ts"
import { claudeName } from "../../layers/claudeHooks/io.ts"
import { AgentLoop } from "../../services/AgentLoop.ts"
import { Sandbox } from "../../services/Sandbox.ts"
import type { ApprovalPolicy } from "../config/approvalPolicy.ts"
import { describe } from "../config/settingsLevels.ts"
import * as Format from "../terminal/format.ts"
import type { ScreenShape } from "../terminal/screen.ts"
import * as Display from "./approvalDisplay.ts"
import { evaluate, parseRule, type Rule, RuleError } from "./rules.ts"
import * as Permissions from "./state.ts"

/** What the model is told when there was nobody to ask. */
export const NO_TERMINAL_REASON = "Not approved: this call needs the user's approval, and agent-loop has no terminal to ask " +
  "(it was not started with --yes)."

/** What the model is told when the user said no. */
export const DENIED_REASON = "The user denied this call."

/** What the model is told when the policy denies every call that needs approval. */
export const POLICY_DENIED_REASON = "Not approved: agent-loop is set to deny every call that needs approval (approval: deny)."

/** What the model is told when the call was too long to show and could not be written to a file either. */
export const UNSHOWABLE_REASON = "Not approved: the call is too long to show the user, and agent-loop could not write it to a file for them to read."

/** What the model is told when a deny rule matched: the rule, and the settings file (or flag) it is written in, home as `~`. */
export const ruleDeniedReason = (rule: Rule) => `Denied by the permission rule "${rule.text}" of ${describe(rule.source)}.`

/** What the model is told when a call to run outside the sandbox could not be asked about. */
export const UNSANDBOXED_NO_TERMINAL_REASON = "Not approved: running a command outside the sandbox needs the user's answer at a prompt, " +
  "and agent-loop has no terminal to ask (--yes does not approve it unless the user's settings say sandbox.allowUnsandboxedCommands: true)."

/** What the model is told when running outside the sandbox is turned off. */
export const UNSANDBOXED_OFF_REASON = "Not approved: the user's settings do not let commands run outside the sandbox " +
  "(sandbox.allowUnsandboxedCommands: false). Find a way that works inside it, or tell the user what is needed."

/** How long a prompt for a tool that needs no approval (an `ask` rule) may wait: it is not under the loop's approval deadline. */
export const ASK_TIMEOUT: Duration.Duration = Duration.seconds(60)

/** How approval is decided. */
export interface ApprovalOptions {
  readonly policy: ApprovalPolicy
  /** A session's own policy instead of `policy` (an editor's session mode over ACP); `undefined`: `policy`. */
  readonly policyFor?: ((sessionKey: string) => ApprovalPolicy | undefined) | undefined
  readonly screen: ScreenShape
  /**
   * Reads the answer; `undefined` when input has ended. Absent when there is no terminal to ask on:
   * the commands pass it only when stdin is a terminal, so this is the one place that decides.
   */
  readonly ask: Effect.Effect<string | undefined> | undefined
  /**
   * Asks about one call instead of showing it and reading `ask` (an editor over ACP, an MCP client
   * by elicitation, asks its user itself): the answer as typed at the prompt (`y`, `a` when
   * `remember`, `n`, `n REASON`), or a denial with its own reason for the model (the client cannot
   * be asked, nobody answered in time).
   */
  readonly askAbout?:
    | ((context: Hook.HookContext, call: Hook.HookToolCall, remember: boolean) => Effect.Effect<string | Hook.Deny | undefined>)
    | undefined
  /** The permission rules; none when absent. */
  readonly permissions?: Permissions.Permissions
  /** What hooks said about calls (`PreToolUse` allow/ask) and the `Notification` hooks. */
  readonly bridge?: Bridge
  /** The terminal's width, for wrapping; default 100. */
  readonly columns?: number
  /** A private directory where a call too long for the screen is written for the user to read; without it such a call is denied. */
  readonly overflowDir?: string
  /** The sandbox `exec` runs in; absent or inactive: commands are not confined, and nothing here changes. */
  readonly sandbox?: SandboxApproval
  /** How long a question waits for an answer before the call is denied; default `ASK_TIMEOUT`. */
  readonly timeout?: Duration.Duration | undefined
}

/** What approval needs to know of the sandbox. */
export interface SandboxApproval {
  /** Commands run confined (the sandbox is not off). */
  readonly active: boolean
  /** `sandbox.autoAllowBashIfSandboxed`. */
  readonly autoAllowExec: boolean
  /** `sandbox.allowUnsandboxedCommands`: `undefined` when no file set it. */
  readonly allowUnsandboxed: boolean | undefined
  /** `sandbox.excludedCommands`, as `exec(…)` rule specifiers. */
  readonly excludedCommands: ReadonlyArray<string>
  /** Lets one approved call run outside the sandbox (`Sandbox.grantUnsandboxed`). */
  readonly grant: (toolCallId: string) => Effect.Effect<void>
}

/** Whether an `exec` call asks to run outside the sandbox. */
export const asksUnsandboxed = (call: { readonly name: string; readonly arguments: unknown; readonly mcp?: unknown }): boolean =>
  call.name === "exec" && call.mcp === undefined && typeof call.arguments === "object" && call.arguments !== null &&
  (call.arguments as Record<string, unknown>)["dangerously_unsandboxed"] === true

/**
 * The `sandbox.excludedCommands` as allow rules: an entry without `:*` or `*` covers the commands
 * that start with its words (`docker` covers `docker ps`), as Claude Code reads it.
 */
const excludedRules = (entries: ReadonlyArray<string>): ReadonlyArray<Rule> =>
  entries.flatMap((entry) => {
    const text = entry.trim()
    const specifier = text.endsWith(":*") || text.includes("*") ? text : `${text}:*`
    const rule = parseRule(`exec(${specifier})`, "allow", "sandbox.excludedCommands")
    return rule instanceof RuleError ? [] : [rule]
  })

type Answer = { readonly _tag: "Once" | "Session" | "Save" } | { readonly _tag: "Deny"; readonly reason: string }

const parseAnswer = (answer: string | undefined, canSuggest: boolean, canSave: boolean): Answer => {
  const text = (answer ?? "").trim()
  const word = text.split(/\s/, 1)[0]!.toLowerCase()
  if (word === "y" || word === "yes") return { _tag: "Once" }
  if (canSuggest && (word === "a" || word === "always")) return { _tag: "Session" }
  if (canSuggest && canSave && (word === "s" || word === "save")) return { _tag: "Save" }
  const reason = word === "n" || word === "no" ? text.slice(word.length).trim() : ""
  return { _tag: "Deny", reason: reason === "" ? DENIED_REASON : `${DENIED_REASON} They said: ${reason}` }
}

/** The CLI's approval hook: `beforeTool` for deny rules (and asking about tools that need no approval), `approveTool` for the rest. */
export const approvalHook = (options: ApprovalOptions): Hook.Hook => {
  const { screen } = options
  const permissions = options.permissions ?? Permissions.none(process.cwd())
  /** Calls the user approved at `beforeTool`: not asked twice. */
  const approvedEarly = new Set<string>()
  const sandbox = options.sandbox !== undefined && options.sandbox.active ? options.sandbox : undefined
  const policyOf = (context: Hook.HookContext): ApprovalPolicy => options.policyFor?.(context.sessionKey) ?? options.policy
  const excluded = excludedRules(sandbox?.excludedCommands ?? [])
  /** Whether `call` is an `exec` call that runs outside the sandbox: asked for, or every part of it excluded. */
  const outside = (call: Hook.HookToolCall): "asked" | "excluded" | undefined => {
    if (sandbox === undefined || call.name !== "exec" || call.mcp !== undefined) return undefined
    if (excluded.length > 0 && evaluate(excluded, call, process.cwd())._tag === "Allow") return "excluded"
    return asksUnsandboxed(call) ? "asked" : undefined
  }
  const OUTSIDE_WHY = "it asks to run outside the sandbox"
  // a one-line mention (denials without asking); the prompt itself shows the whole call
  // (cut before `truncate`, which normalises whitespace over all it is given)
  const what = (call: Hook.HookToolCall) =>
    Display.visible(`${Format.truncate(call.name, 80)} ${Format.truncate((JSON.stringify(call.arguments ?? {}) ?? "").slice(0, 1000), 120)}`)

  /** Writes a call too long for the screen to a private file; its path, or `undefined` when it cannot. */
  const overflow = (call: Hook.HookToolCall, plain: string) =>
    options.overflowDir === undefined ? Effect.succeed(undefined) : Effect.promise(async () => {
      try {
        await fs.mkdir(options.overflowDir!, { recursive: true, mode: 0o700 })
        const file = nodePath.join(options.overflowDir!, `call-${Date.now()}-${call.id.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64)}.txt`)
        await fs.writeFile(file, `${call.name}\n${plain}\n`, { mode: 0o600, flag: "wx" })
        return file
      } catch {
        return undefined
      }
    })

  /**
   * Shows the whole call and asks; denies when it cannot be shown whole. Rules are offered only
   * when `remember`: an allow rule cannot answer a call an ask rule or hook asks about, nor a
   * write into a protected location.
   */
  const prompt = (
    context: Hook.HookContext,
    call: Hook.HookToolCall,
    why: string | undefined,
    ask: Effect.Effect<string | undefined>,
    remember: boolean
  ) =>
    Effect.gen(function*() {
      const err = screen.err
      const shown = Display.show(call, err, options.columns ?? 100)
      let lines = shown.lines
      if (lines.length > Display.MAX_SHOWN_LINES) {
        const file = yield* overflow(call, shown.plain)
        if (file === undefined) {
          yield* screen.line(`agent-loop: denied ${what(call)}: it is too long to show here and could not be written to a file`)
          return { _tag: "Deny", reason: UNSHOWABLE_REASON } as Answer
        }
        const head = Display.MAX_SHOWN_LINES / 2
        lines = [...lines.slice(0, head), err.yellow(`    … ${lines.length - head} more lines: the whole call is in ${file} (read it before answering)`)]
      }
      const suggested = remember ? permissions.suggest(call) : []
      const suggestedShown = Display.visible(suggested.join(", "))
      const canSave = permissions.saveTarget !== undefined
      if (options.bridge !== undefined) {
        // a PermissionRequest hook answers in the user's place
        const answered = yield* options.bridge.permissionRequest(context, call)
        if (answered !== undefined) {
          const said = `hook ${answered.hook} ${answered.decision === "allow" ? "allowed" : "denied"} ${what(call)}`
          yield* screen.line(err.dim(`(${Display.visible(said)}${answered.reason === undefined ? "" : `: ${Display.visible(answered.reason)}`})`))
          return answered.decision === "allow"
            ? { _tag: "Once" } as Answer
            : { _tag: "Deny", reason: answered.reason ?? `denied by hook ${answered.hook}` } as Answer
        }
        yield* options.bridge.notify(context, `agent-loop needs your permission to use ${claudeName(call)}`)
      }
      if (options.askAbout !== undefined) {
        const said = yield* options.askAbout(context, call, suggested.length > 0)
        const answer = typeof said === "object" ? { _tag: "Deny", reason: said.reason } as Answer : parseAnswer(said, suggested.length > 0, false)
        if (answer._tag === "Session") permissions.allowForSession(suggested)
        return answer
      }
      yield* screen.line(`${err.yellow("?")} ${err.bold(`${Display.visible(Format.truncate(call.name, 80))} wants to run`)}${why === undefined ? "" : err.dim(` (${Display.visible(why)})`)}:`)
      for (const line of lines) yield* screen.line(line)
      if (shown.operators.length > 0) yield* screen.line(`  ${err.red("shell operators:")} ${shown.operators.join(" ")}`)
      if (outside(call) === "asked") {
        yield* screen.line(`  ${err.red("outside the sandbox:")} the sandbox stopped this command; y runs it again unconfined, with all your privileges`)
      }
      const choices = [
        "y: allow once",
        ...(suggested.length > 0 ? [`a: allow ${suggestedShown} for this session`] : []),
        ...(suggested.length > 0 && canSave ? [`s: allow and save to ${nodePath.relative(process.cwd(), permissions.saveTarget!) || permissions.saveTarget}`] : []),
        "n: deny (n REASON tells the model why)"
      ]
      yield* screen.line(`  ${err.dim(choices.join(" · "))}`)
      yield* screen.prompt(`${err.yellow("?")} allow ${err.bold(Format.truncate(call.name, 80))}? [y${suggested.length > 0 ? "/a" : ""}${suggested.length > 0 && canSave ? "/s" : ""}/N] `)
      const answer = parseAnswer(yield* ask, suggested.length > 0, canSave)
      if (answer._tag === "Session" || answer._tag === "Save") permissions.allowForSession(suggested)
      // as Claude Code's WebFetch asks: once per new host, so a host said yes to is not asked about again this session
      else if (answer._tag === "Once" && call.name === "web_fetch" && call.mcp === undefined) permissions.allowForSession(permissions.suggest(call))
      if (answer._tag === "Save") {
        yield* permissions.save(suggested).pipe(
          Effect.flatMap(() => screen.line(err.dim(`(saved ${suggestedShown} to ${permissions.saveTarget})`))),
          Effect.catch((message) => screen.line(`agent-loop: warn: ${message}; allowed for this session only`))
        )
      }
      if (answer._tag === "Deny") yield* screen.line(err.dim(`(denied ${Format.truncate(call.name, 80)})`))
      return answer
    }).pipe(Effect.onInterrupt(() => screen.line(screen.err.dim(`(no answer: ${Format.truncate(call.name, 80)} denied)`))))

  /**
   * An `exec` call that asks to run outside the sandbox: asked on a terminal whatever rules and the
   * policy say; approved without asking only under `--yes` with `allowUnsandboxedCommands: true`;
   * otherwise denied, saying why. An approval grants that call, once.
   */
  const unsandboxed = (context: Hook.HookContext, call: Hook.HookToolCall, why: string | undefined) =>
    Effect.gen(function*() {
      if (sandbox!.allowUnsandboxed === false) {
        yield* screen.line(`agent-loop: denied ${what(call)}: it asks to run outside the sandbox, and sandbox.allowUnsandboxedCommands is false`)
        return Hook.deny(UNSANDBOXED_OFF_REASON) as Hook.Approve | Hook.Deny
      }
      const reason = why === undefined ? OUTSIDE_WHY : `${OUTSIDE_WHY}; ${why}`
      let decision: Hook.Approve | Hook.Deny
      if (policyOf(context) === "approve" && sandbox!.allowUnsandboxed === true) decision = Hook.approve
      else if (policyOf(context) === "deny") decision = yield* byPolicy(context, call, reason, false)
      else if (options.ask === undefined) {
        yield* screen.line(
          `agent-loop: denied ${what(call)}: it asks to run outside the sandbox, which needs your yes at a prompt and there is no terminal to ask` +
            `${policyOf(context) === "approve" ? " (--yes approves it only with sandbox.allowUnsandboxedCommands: true in your settings)" : ""}`
        )
        decision = Hook.deny(UNSANDBOXED_NO_TERMINAL_REASON)
      } else decision = yield* byPolicy(context, call, reason, false, options.ask)
      if (decision._tag === "Approve") yield* sandbox!.grant(call.id)
      return decision
    })

  /** The policy's decision for a call nothing else decided; asks on a terminal (`force`: whatever the policy). */
  const byPolicy = (
    context: Hook.HookContext,
    call: Hook.HookToolCall,
    why: string | undefined,
    remember: boolean,
    force?: Effect.Effect<string | undefined>
  ) => {
    if (force !== undefined) return Effect.map(prompt(context, call, why, force, false), (answer) => answer._tag === "Deny" ? Hook.deny(answer.reason) : Hook.approve)
    if (policyOf(context) === "approve") return Effect.succeed<Hook.Approve | Hook.Deny>(Hook.approve)
    if (policyOf(context) === "deny") {
      return Effect.as(screen.line(`agent-loop: denied ${what(call)}: approval is set to deny`), Hook.deny(POLICY_DENIED_REASON))
    }
    const ask = options.ask
    if (ask === undefined) {
      return Effect.as(
        screen.line(`agent-loop: denied ${what(call)}: it needs approval${why === undefined ? "" : ` (${Display.visible(why)})`} and there is no terminal to ask (pass --yes to approve)`),
        Hook.deny(NO_TERMINAL_REASON)
      )
    }
    return Effect.map(prompt(context, call, why, ask, remember), (answer) => answer._tag === "Deny" ? Hook.deny(answer.reason) : Hook.approve)
  }

  const denyByRule = (call: Hook.HookToolCall, rule: Rule) =>
    Effect.as(screen.line(`agent-loop: denied ${what(call)}: permission rule ${rule.text} (${describe(rule.source)})`), Hook.deny(ruleDeniedReason(rule)))

  const hook = Hook.make({
    beforeTool: ({ call, context }) => {
      const verdict = permissions.evaluate(call)
      if (verdict._tag === "Deny") return denyByRule(call, verdict.rule)
      const hook = options.bridge?.peek(call.id)
      // an excluded command runs outside the sandbox once approved (at approveTool): exec runs a call outside only when it asks to
      if (outside(call) === "excluded" && !asksUnsandboxed(call)) {
        return Hook.modify({ arguments: { ...(call.arguments as Record<string, unknown>), dangerously_unsandboxed: true } })
      }
      // a tool that needs approval is asked about at approveTool; others only when a rule or hook says so
      if (call.requiresApproval || (verdict._tag !== "Ask" && hook?.decision !== "ask")) return undefined
      const asked = verdict._tag === "Ask" ? `the rule ${verdict.rule.text} asks` : `hook ${hook!.hook} asks${hook!.reason === undefined ? "" : `: ${hook!.reason}`}`
      const why = outside(call) === "asked" ? `${OUTSIDE_WHY}; ${asked}` : asked
      return byPolicy(context, call, why, false).pipe(
        Effect.timeoutOption(options.timeout ?? ASK_TIMEOUT),
        Effect.map((decision) => {
          if (decision._tag === "Some" && decision.value._tag === "Approve") {
            approvedEarly.add(call.id)
            // most such calls never reach approveTool (their tool needs no approval): forget the oldest past a bound
            if (approvedEarly.size > MAX_VERDICTS) approvedEarly.delete(approvedEarly.values().next().value!)
            return undefined
          }
          return decision._tag === "Some" ? decision.value as Hook.Deny : Hook.deny(DENIED_REASON)
        })
      )
    },
    approveTool: ({ call, context }) => {
      const runsOutside = outside(call)
      if (approvedEarly.delete(call.id)) {
        // the prompt at beforeTool named running outside the sandbox; an excluded command was approved as any
        return runsOutside === undefined ? Hook.approve : Effect.as(sandbox!.grant(call.id), Hook.approve)
      }
      const verdict = permissions.evaluate(call)
      if (verdict._tag === "Deny") return denyByRule(call, verdict.rule)
      const hook = options.bridge?.take(call.id)
      if (runsOutside === "asked") {
        const why = verdict._tag === "Ask"
          ? `the rule ${verdict.rule.text} asks`
          : hook?.decision === "ask"
          ? `hook ${hook.hook} asks${hook.reason === undefined ? "" : `: ${hook.reason}`}`
          : undefined
        return unsandboxed(context, call, why)
      }
      if (runsOutside === "excluded") {
        // approved as any command is, then run outside the sandbox (sandbox.excludedCommands); never auto-allowed
        return Effect.tap(decide(context, call, verdict, hook), (decision) => decision._tag === "Approve" ? sandbox!.grant(call.id) : Effect.void)
      }
      if (
        sandbox?.autoAllowExec === true && call.name === "exec" && call.mcp === undefined && verdict._tag !== "Ask" &&
        hook?.decision !== "ask"
      ) return Hook.approve
      return decide(context, call, verdict, hook)
    }
  })

  /** The decision of rules, a hook and the policy on a call that needs approval. */
  const decide = (
    context: Hook.HookContext,
    call: Hook.HookToolCall,
    verdict: ReturnType<Permissions.Permissions["evaluate"]>,
    hook: ReturnType<NonNullable<ApprovalOptions["bridge"]>["take"]>
  ): Effect.Effect<Hook.Approve | Hook.Deny> => {
    // a tool that needs approval only for some calls (a write into a protected location) is never approved by a rule
    const perCall = !call.requiresApproval
    if (hook?.decision === "allow" && verdict._tag !== "Ask") return Effect.succeed(Hook.approve)
    if (verdict._tag === "Allow" && !perCall && hook?.decision !== "ask") return Effect.succeed(Hook.approve)
    const why = verdict._tag === "Ask"
      ? `the rule ${verdict.rule.text} asks`
      : hook?.decision === "ask"
      ? `hook ${hook.hook} asks${hook.reason === undefined ? "" : `: ${hook.reason}`}`
      : perCall
      ? "it writes to a protected location"
      : verdict._tag === "None"
      ? verdict.why
      : undefined
    return byPolicy(context, call, why, verdict._tag === "None" && !perCall && hook?.decision !== "ask")
  }
  return hook
}

/** What registering the approval hook needs of the settings (`CliSettings` has all of it). */
export interface ApprovalSettings {
  readonly approval: ApprovalPolicy
  readonly permissions: Permissions.Permissions
  readonly hookBridge: Bridge
  /** A call too long to show is written under its `approvals/`. */
  readonly dataDir: string
  readonly sandbox: Pick<SandboxApproval, "autoAllowExec" | "allowUnsandboxed" | "excludedCommands">
  /** How long a question waits for an answer (`--approval-timeout`); default `ASK_TIMEOUT`. */
  readonly approvalTimeout?: Duration.Duration | undefined
}

/**
 * Registers the approval hook on the loop: last of the `beforeTool` hooks (so deny rules see the
 * arguments other hooks left), with room for a prompt at `beforeTool` (an `ask` rule on a tool
 * that needs no approval), which denies by itself at its deadline.
 */
export const register = (
  settings: ApprovalSettings,
  screen: ScreenShape,
  ask: Effect.Effect<string | undefined> | undefined,
  askAbout?: ApprovalOptions["askAbout"],
  policyFor?: ApprovalOptions["policyFor"]
) =>
  Effect.gen(function*() {
    const loop = yield* AgentLoop
    const sandbox = yield* Sandbox
    // a Stop hook that sends the model back is said on the screen, not glued onto the answer
    settings.hookBridge.onContinued((_context, reason) => screen.line(screen.err.yellow(`↻ Stop hook: ${Display.visible(reason)}`)))
    return yield* loop.registerHook(
      approvalHook({
        policy: settings.approval,
        screen,
        ask,
        ...(askAbout === undefined ? {} : { askAbout }),
        ...(policyFor === undefined ? {} : { policyFor }),
        permissions: settings.permissions,
        bridge: settings.hookBridge,
        ...(process.stderr.columns === undefined ? {} : { columns: process.stderr.columns }),
        overflowDir: nodePath.join(settings.dataDir, "approvals"),
        timeout: settings.approvalTimeout,
        sandbox: {
          active: sandbox.kind !== "none",
          autoAllowExec: settings.sandbox.autoAllowExec,
          allowUnsandboxed: settings.sandbox.allowUnsandboxed,
          excludedCommands: settings.sandbox.excludedCommands,
          grant: sandbox.grantUnsandboxed
        }
      }),
      // a little past the question's own limit: a question unanswered by then is stopped and the call denied
      { name: "cli-approval", source: "agent-loop CLI", priority: -1, timeout: Duration.sum(settings.approvalTimeout ?? ASK_TIMEOUT, Duration.seconds(5)) }
    )
  })
