/**
 * `exec`: runs a shell command in the workspace root with a timeout on the Effect `Clock` and a cap
 * on captured output. The whole process group is killed when the timeout fires or the call is
 * interrupted, so nothing the command started outlives it.
 *
 * The command runs in the `Sandbox` of the context (unconfined with the default, `SandboxNone`).
 * When the sandbox seems to have stopped it, the result ends with a line starting
 * `SANDBOX_DENIED_MARKER`; the same call with `dangerously_unsandboxed: true` then runs outside
 * the sandbox only if the host's approval layer granted exactly that call
 * (`Sandbox.grantUnsandboxed`, after asking the user): the model can ask, never grant.
 *
 * With an `ExternalTerminal` in the context (an editor's terminal over ACP, where the user opted
 * in), a foreground command of a session it takes runs there instead, outside the sandbox.
 *
 * @example
 * ```ts
 * import { makeExec, ToolRegistryLive } from "effect-agent-loop"
 * const tools = ToolRegistryLive.layer([makeExec({ defaultTimeout: "10 seconds" })])
 * ```
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ChildProcess from "effect/process/ChildProcess"
import * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import { ToolError } from "../domain/errors.ts"
import { completeUtf8Length } from "../domain/text.ts"
import * as Tool from "../domain/Tool.ts"
import { type ExternalExit, ExternalTerminal } from "../services/ExternalTerminal.ts"
import { none, Sandbox, type SandboxRequest } from "../services/Sandbox.ts"
import { Secrets, type SecretsShape } from "../services/Secrets.ts"
import { BackgroundJobs, describeState } from "./backgroundJobs.ts"
import { Workspace } from "./workspace.ts"
import { scrubbedEnv } from "./secretEnv.ts"

export { isSecretEnv, SECRET_ENV_PATTERN, SECRET_VALUE_PATTERN } from "./secretEnv.ts"

/** Limits of `exec`. */
export interface ExecOptions {
  /** Timeout when the call gives no `timeout_ms`. Default 30 seconds. */
  readonly defaultTimeout?: Duration.Input
  /** Upper bound of `timeout_ms`. Default 10 minutes. */
  readonly maxTimeout?: Duration.Input
  /** Most bytes of stdout and stderr (combined) kept in the result. Default 64 KiB. */
  readonly maxOutputBytes?: number
  /** After SIGTERM, how long a process group may take to exit before SIGKILL. Default 2 seconds. */
  readonly killGrace?: Duration.Input
  /**
   * Withhold credentials from the command's environment (see `isSecretEnv`) so the model cannot
   * echo them into the conversation. Default true.
   */
  readonly stripSecretEnv?: boolean
}

/** The default cap on the combined stdout and stderr kept by `exec`. */
export const DEFAULT_EXEC_MAX_OUTPUT_BYTES = 64 * 1024

/** How long output may keep arriving after the process exited (a background child can hold the pipe). */
const DRAIN_GRACE = Duration.seconds(1)

/** The arguments of `exec`. */
export const ExecParameters = Schema.Struct({
  command: Schema.String.annotate({ description: "Shell command, run with `sh -c` in the workspace root" }),
  timeout_ms: Schema.optionalKey(
    Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)).annotate({ description: "Timeout in milliseconds" })
  ),
  background: Schema.optionalKey(Schema.Boolean.annotate({
    description: "Start the command and return at once with a job id, for a server or watcher that keeps running: " +
      "read its output with exec_output, stop it with exec_kill (timeout_ms does not apply; it is stopped when the session ends)"
  })),
  dangerously_unsandboxed: Schema.optionalKey(Schema.Boolean.annotate({
    description: "Run outside the OS sandbox. Only for a command the sandbox stopped (its result says so); " +
      "the user is asked every time and may refuse"
  }))
})

/** The start of the line ending `exec`'s result when the sandbox seems to have stopped the command. */
export const SANDBOX_DENIED_MARKER = "[sandbox denied: "

/** The unconfined path: the command as it is, for a call the user let run outside the sandbox. */
const unconfined = none()

/** Keeps the first `max` bytes of a byte stream and counts the rest. */
const makeCollector = (max: number) => {
  const chunks: Array<Uint8Array> = []
  let kept = 0
  let total = 0
  return {
    add: (chunk: Uint8Array) => {
      total += chunk.length
      if (kept < max) {
        const part = chunk.subarray(0, max - kept)
        chunks.push(part)
        kept += part.length
      }
    },
    render: (): string => {
      const bytes = new Uint8Array(kept)
      let at = 0
      for (const chunk of chunks) {
        bytes.set(chunk, at)
        at += chunk.length
      }
      // a character cut in half at the cap is left out, not shown as U+FFFD
      const shown = total > kept ? bytes.subarray(0, completeUtf8Length(bytes)) : bytes
      let text = new TextDecoder().decode(shown)
      if (total > kept) {
        text +=
          `\n[output truncated: showing the first ${kept} of ${total} bytes; redirect output to a file ` +
          "and inspect it with grep or read_file]"
      }
      return text.length === 0 ? "(no output)" : text
    }
  }
}

/** This process's environment without the variables `isSecretEnv` withholds (the same as hook scripts get). */
const secretFreeEnv = (secrets: SecretsShape): Record<string, string> => scrubbedEnv(globalThis.process?.env ?? {}, { secrets })

/** What the model is told when it asked to run outside the sandbox without the user's grant. */
const UNGRANTED = "Not run: running outside the sandbox (dangerously_unsandboxed) needs the user's approval of this very call, " +
  "and it was not given. Run the command in the sandbox, or leave the choice to the user."

/** The result of a command run in an `ExternalTerminal`, as exec's own. */
const externalResult = (ran: ExternalExit, timeout: Duration.Duration, maxMs: number) => {
  const output = `${ran.output === "" ? "(no output)" : ran.output}${
    ran.truncated ? "\n[output truncated: only the last part is shown; redirect output to a file and inspect it with grep or read_file]" : ""
  }`
  if (ran.timedOut) {
    return Effect.fail(new ToolError({
      message: `Command timed out after ${Duration.toMillis(timeout)} ms and was killed (pass a larger timeout_ms, at most ${maxMs}, if it needs longer). ` +
        `Output before the timeout:\n${output}`
    }))
  }
  const status = ran.exitCode === null ? `killed by signal ${ran.signal ?? "?"}` : `exit code: ${ran.exitCode}`
  return Effect.succeed({ content: `${status}\n${output}`, isError: ran.exitCode !== 0 })
}

/** `exec` with the given limits. */
export const makeExec = (options: ExecOptions = {}) => {
  const maxTimeout = Duration.fromInputUnsafe(options.maxTimeout ?? "10 minutes")
  const defaultTimeout = Duration.min(Duration.fromInputUnsafe(options.defaultTimeout ?? "30 seconds"), maxTimeout)
  const maxOutputBytes = options.maxOutputBytes ?? DEFAULT_EXEC_MAX_OUTPUT_BYTES
  const killGrace = Duration.fromInputUnsafe(options.killGrace ?? "2 seconds")
  const stripSecretEnv = options.stripSecretEnv ?? true
  const maxMs = Duration.toMillis(maxTimeout)
  return Tool.make({
    name: "exec",
    description: "Runs a shell command with `sh -c` in the workspace root, without stdin, and returns its exit code " +
      `and combined stdout and stderr (at most ${maxOutputBytes} bytes are kept). The command is killed, with ` +
      `everything it started, after timeout_ms (default ${Duration.toMillis(defaultTimeout)}, at most ${maxMs}).`,
    parameters: ExecParameters,
    requiresApproval: true,
    // exec's own timeout kills the command first and reports its output; this only backs it up
    timeout: Duration.sum(maxTimeout, Duration.sum(Duration.times(killGrace, 2), DRAIN_GRACE)),
    execute: ({ background, command, dangerously_unsandboxed, timeout_ms }, context) =>
      Effect.gen(function*() {
        const workspace = yield* Workspace
        const secrets = yield* Secrets
        const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
        const sandbox = yield* Sandbox
        const outside = dangerously_unsandboxed === true && sandbox.kind !== "none"
        if (outside && !(yield* sandbox.takeUnsandboxedGrant(context.toolCallId))) {
          return yield* Effect.fail(new ToolError({ message: UNGRANTED }))
        }
        const timeout = timeout_ms === undefined ? defaultTimeout : Duration.millis(Math.min(timeout_ms, maxMs))
        const external = yield* Effect.serviceOption(ExternalTerminal)
        if (Option.isSome(external) && background !== true) {
          const ran = yield* external.value.run({
            sessionKey: context.sessionKey,
            toolCallId: context.toolCallId,
            command,
            cwd: workspace.root,
            timeout,
            maxOutputBytes
          })
          if (Option.isSome(ran)) return yield* externalResult(ran.value, timeout, maxMs)
        }
        const output = makeCollector(maxOutputBytes)
        const request: SandboxRequest = {
          command: "sh",
          args: ["-c", command],
          cwd: workspace.root,
          workspace: workspace.root,
          // confined, the sandbox gives the command its own minimal environment; unconfined, this one's without secrets
          ...(stripSecretEnv && (outside || sandbox.kind === "none") ? { env: secretFreeEnv(secrets), extendEnv: false } : {})
        }
        const spawn = (onOutput: (chunk: Uint8Array) => void) =>
          Effect.scoped(Effect.gen(function*() {
            const wrapped = yield* (outside ? unconfined : sandbox).wrap(request).pipe(
              Effect.mapError((e) => new ToolError({ message: e.message }))
            )
            const handle = yield* spawner.spawn(ChildProcess.make(wrapped.command, wrapped.args, {
              cwd: wrapped.cwd,
              stdin: "ignore",
              detached: true,
              forceKillAfter: killGrace,
              env: wrapped.env,
              extendEnv: wrapped.extendEnv
            }))
            const reader = yield* Stream.runForEach(handle.all, (chunk) => Effect.sync(() => onOutput(chunk))).pipe(
              Effect.forkScoped
            )
            const exited = yield* Effect.exit(handle.exitCode)
            yield* Fiber.join(reader).pipe(Effect.timeoutOption(DRAIN_GRACE), Effect.ignore)
            return yield* exited
          }))
        if (background === true) {
          const started = yield* (yield* BackgroundJobs).start(context.sessionKey, command, (onOutput) =>
            spawn(onOutput).pipe(
              Effect.map(Number),
              Effect.mapError((e) => e._tag === "ToolError" ? e : new ToolError({ message: e.cause instanceof Error ? e.cause.message : e.message }))
            ))
          return `Started background job ${started.id} (${describeState(started.state)}). Read its output with exec_output ` +
            `{"id":"${started.id}"}, stop it with exec_kill {"id":"${started.id}"}; it is stopped when the session ends.`
        }
        const run = spawn((chunk) => output.add(chunk))
        const exited = yield* run.pipe(
          Effect.timeoutOption(timeout),
          Effect.mapError((e) => {
            if (e._tag === "ToolError") return e
            const reason = e.cause instanceof Error ? e.cause.message : e.message
            return new ToolError({ message: `Command failed to run or was killed: ${reason}\n${output.render()}` })
          })
        )
        if (Option.isNone(exited)) {
          return yield* Effect.fail(
            new ToolError({
              message: `Command timed out after ${Duration.toMillis(timeout)} ms and was killed ` +
                `(pass a larger timeout_ms, at most ${maxMs}, if it needs longer). Output before the timeout:\n` +
                output.render()
            })
          )
        }
        const code = Number(exited.value)
        const shown = output.render()
        const review = outside ? { notes: [] } : yield* sandbox.review(request, { exitCode: code, output: shown })
        const lines = [...review.notes]
        if (review.denied !== undefined) {
          lines.push(`${SANDBOX_DENIED_MARKER}${review.denied}. If the command needs this, the user may approve running it ` +
            "outside the sandbox: the same call with dangerously_unsandboxed: true]")
        }
        const tail = lines.length === 0 ? "" : `\n${lines.join("\n")}`
        return { content: `exit code: ${code}\n${shown}${tail}`, isError: code !== 0 }
      })
  })
}

/** `exec` with default limits. */
export const exec = makeExec()
