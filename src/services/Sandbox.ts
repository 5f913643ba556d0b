/**
 * `Sandbox`: the operating system's confinement of everything the model makes run — `exec`'s
 * commands, and by a host's setting MCP stdio servers and hook scripts. A command goes through
 * `wrap`, which turns it into the command that really runs (bubblewrap on Linux, `sandbox-exec` on
 * macOS, itself with `SandboxNone`), with the environment it gets.
 *
 * The sandbox does not replace approval: `exec` still asks. It bounds what an approved command
 * can do: write only the workspace (not its protected locations), read nothing of the user's
 * credentials, reach only the hosts allowed, through the loop's proxy.
 *
 * `wrap` is the one path for anything run on the model's behalf: `exec` uses it today, and a
 * background command, a command file's shell line, an MCP stdio server or a hook script goes
 * through it the same way (wrap, then spawn what it returns, detached, in the same scope).
 *
 * The service is a `Context.Reference` whose default is `SandboxNone` (commands run as they always
 * did), so a library program that provides nothing keeps working; a host turns the sandbox on by
 * providing `SandboxLinux.layer`, `SandboxMacos.layer` or `SandboxAuto.layer` (the one for this
 * platform; the CLI's default).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Sandbox } from "effect-agent-loop"
 *
 * const program = Effect.gen(function*() {
 *   const sandbox = yield* Sandbox
 *   const status = yield* sandbox.status
 *   if (!status.available) console.log(`${status.reason} — ${status.fix}`)
 * })
 * ```
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"

/** Which sandbox a layer provides. */
export type SandboxKind = "linux" | "macos" | "none"

/**
 * Whether the sandbox can run here, for `agent-loop sandbox status` and `doctor`. `reason` and
 * `fix` are one line each when it cannot.
 */
export interface SandboxStatus {
  readonly kind: SandboxKind
  /** Commands run confined (for `none`: false, by choice). */
  readonly available: boolean
  /** Why it cannot run, e.g. "bubblewrap (bwrap) is not installed". */
  readonly reason?: string
  /** What makes it run, or how to run without it. */
  readonly fix?: string
  /** What was found, e.g. the bubblewrap binary and its version. */
  readonly detail?: string
}

/** Why the sandbox refused to run a command. */
export type SandboxErrorReason =
  /** The sandbox cannot start here (no bubblewrap, user namespaces off, not this platform). */
  | "Unavailable"
  /** Setting the sandbox up for this command failed (the proxy, a temporary directory). */
  | "SetupFailed"

/** The sandbox could not run a command; `message` is one line and names the fix. */
export class SandboxError extends Schema.TaggedError<SandboxError>()("SandboxError", {
  reason: Schema.Literals(["Unavailable", "SetupFailed"]),
  message: Schema.String
}) {}

/** A command to run confined. */
export interface SandboxRequest {
  /** The program, found on the sandbox's `PATH` (`sh`). */
  readonly command: string
  readonly args: ReadonlyArray<string>
  /** The working directory. */
  readonly cwd: string
  /** The workspace root, writable (besides its protected locations); `cwd` when absent. */
  readonly workspace?: string
  /**
   * Variables for the command, as `ChildProcess` takes them (`undefined` unsets). Unconfined, they
   * change this process's environment (`extendEnv`); confined, the command starts from a minimal
   * environment and only the set variables that do not look secret are added.
   */
  readonly env?: Readonly<Record<string, string | undefined>>
  /** Whether the command inherits this process's environment (unconfined only). Default true. */
  readonly extendEnv?: boolean
  /**
   * Names of `env` given to the confined command even when they look secret: the variables the
   * user configured for it (an MCP server's `env`, a hook's passed variables), which it needs.
   */
  readonly pass?: ReadonlyArray<string>
  /**
   * Files the user's own configuration names for the command (an MCP server's script): kept in
   * sight, read-only with their directories, where the sandbox's private `/tmp` and `/run` would
   * hide them. Never filled from what a model wrote.
   */
  readonly reads?: ReadonlyArray<string>
}

/** The command that really runs, for `ChildProcess.make(command, args, { cwd, env, extendEnv })`. */
export interface SandboxedCommand {
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly cwd: string
  readonly env: Readonly<Record<string, string | undefined>>
  readonly extendEnv: boolean
  /** Whether it runs confined (false with `SandboxNone`, or when run outside by approval). */
  readonly sandboxed: boolean
}

/** How a finished command went, for `review`. */
export interface SandboxOutcome {
  readonly exitCode: number
  /** Its output as the caller kept it (stdout and stderr together). */
  readonly output: string
}

/** What the sandbox says about a finished command. */
export interface SandboxReview {
  /**
   * Set when the command seems to have failed because of the sandbox (a write to a read-only
   * place, a host not allowed): one line saying what, so the host can offer to run it outside
   * the sandbox with the user's approval.
   */
  readonly denied?: string
  /** Things the user should know, e.g. a protected location the command created. */
  readonly notes: ReadonlyArray<string>
}

/** The sandbox. */
export interface SandboxShape {
  readonly kind: SandboxKind
  /** Whether it can run here; probed once (by running `bwrap … true`), then cached. */
  readonly status: Effect.Effect<SandboxStatus>
  /**
   * The command that runs `request` confined, with its environment. Fails with `Unavailable` when
   * the sandbox cannot start (fail closed: nothing runs unconfined by accident). The scope owns
   * what the command needs while it runs (the network bridge's socket, a profile file).
   */
  readonly wrap: (request: SandboxRequest) => Effect.Effect<SandboxedCommand, SandboxError, Scope.Scope>
  /** After a command: whether it was denied by the sandbox, and what else to tell. */
  readonly review: (request: SandboxRequest, outcome: SandboxOutcome) => Effect.Effect<SandboxReview>
  /**
   * Lets the tool call `toolCallId` run outside the sandbox once (`exec`'s
   * `dangerously_unsandboxed`). Only the approval layer calls this, after the user approved that
   * very call: the model can ask to run unconfined, never grant it.
   */
  readonly grantUnsandboxed: (toolCallId: string) => Effect.Effect<void>
  /** Takes the grant of `toolCallId`: true once after `grantUnsandboxed`, false otherwise. */
  readonly takeUnsandboxedGrant: (toolCallId: string) => Effect.Effect<boolean>
}

/** The sandbox for unconfined commands: `wrap` returns the command unchanged. */
export const none = (): SandboxShape => ({
  kind: "none",
  status: Effect.succeed({
    kind: "none",
    available: false,
    reason: "the sandbox is off",
    fix: "turn it on with --sandbox on or sandbox.enabled: true"
  }),
  wrap: (request) =>
    Effect.succeed({
      command: request.command,
      args: request.args,
      cwd: request.cwd,
      env: request.env ?? {},
      extendEnv: request.extendEnv ?? true,
      sandboxed: false
    }),
  review: () => Effect.succeed({ notes: [] }),
  grantUnsandboxed: () => Effect.void,
  takeUnsandboxedGrant: () => Effect.succeed(false)
})

/**
 * The sandbox commands run in; defaults to `SandboxNone` (see the module doc). Provide
 * `SandboxLinux.layer`, `SandboxMacos.layer` or `SandboxAuto.layer` to confine them.
 */
export class Sandbox extends Context.Reference<SandboxShape>("effect-agent-loop/Sandbox", {
  defaultValue: none
}) {}
