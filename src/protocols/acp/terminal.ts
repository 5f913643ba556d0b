/**
 * `exec`'s commands in an ACP client's terminal (`terminal/create`, `terminal/output`,
 * `terminal/wait_for_exit`, `terminal/kill`, `terminal/release`), as the `ExternalTerminal` the
 * tools find: only for the sessions of a client that offers `terminal`, and only when the user
 * started `agent-loop acp --client-terminal` (the commands then run outside the loop's sandbox, with
 * the editor's environment). The terminal is shown in the tool call while the command runs; a
 * timeout or a stop kills it, and it is released once its output is read.
 */
import type * as Acp from "@agentclientprotocol/sdk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { ToolError } from "../../domain/errors.ts"
import type { ExternalExit, ExternalTerminalShape } from "../../services/ExternalTerminal.ts"

/** What a client offers one of its sessions: a terminal per command, and a way to show it in a tool call. */
export interface EditorTerminal {
  readonly create: (params: Omit<Acp.CreateTerminalRequest, "sessionId">) => Promise<Acp.TerminalHandle>
  readonly show: (toolCallId: string, terminalId: string) => Promise<void>
}

/** The client's terminal for a session key; `undefined` when it is not a session of a client offering one. */
export type Reach = (sessionKey: string) => EditorTerminal | undefined

/** Commands through the editor: `terminal` goes into the tools' layer, `attach` is called by the connection once it knows its client. */
export interface Bridge {
  readonly terminal: ExternalTerminalShape
  readonly attach: (reach: Reach) => void
}

/** How long a kill or a release may take: a client that does not answer does not hold the turn. */
const CLIENT_GRACE = Duration.seconds(5)

const messageOf = (error: unknown): string =>
  error instanceof Error ? error.message : typeof error === "object" && error !== null && "message" in error ? String(error.message) : String(error)

/** Asks the client, ignoring a failure or silence past `CLIENT_GRACE`. */
const quietly = (ask: () => Promise<unknown>) =>
  Effect.promise(() => ask().catch(() => undefined)).pipe(Effect.timeoutOption(CLIENT_GRACE), Effect.asVoid)

/** A bridge with no client yet: every command in the loop until `attach`. */
export const bridge = (): Bridge => {
  let reach: Reach = () => undefined
  const terminal: ExternalTerminalShape = {
    run: (command) => {
      const editor = reach(command.sessionKey)
      if (editor === undefined) return Effect.succeedNone
      return Effect.scoped(Effect.gen(function*() {
        const handle = yield* Effect.acquireRelease(
          Effect.tryPromise({
            try: () => editor.create({ command: "sh", args: ["-c", command.command], cwd: command.cwd, outputByteLimit: command.maxOutputBytes }),
            catch: (error) => new ToolError({ message: `The editor could not run the command in its terminal: ${messageOf(error)}` })
          }),
          // stopped (or failed) at any point after it started: the command is killed before the
          // terminal is released, not left running in the editor
          (handle, exit) =>
            Exit.isSuccess(exit)
              ? quietly(() => handle.release())
              : Effect.andThen(quietly(() => handle.kill()), quietly(() => handle.release()))
        )
        yield* quietly(() => editor.show(command.toolCallId, handle.id))
        const kill = quietly(() => handle.kill())
        const exited = yield* Effect.tryPromise({
          try: () => handle.waitForExit(),
          catch: (error) => new ToolError({ message: `The editor's terminal failed: ${messageOf(error)}` })
        }).pipe(Effect.timeoutOption(command.timeout))
        if (Option.isNone(exited)) yield* kill
        const output = yield* Effect.tryPromise({
          try: () => handle.currentOutput(),
          catch: (error) => new ToolError({ message: `The editor's terminal output could not be read: ${messageOf(error)}` })
        })
        const status = Option.isSome(exited) ? exited.value : output.exitStatus ?? {}
        return Option.some<ExternalExit>({
          exitCode: status.exitCode ?? null,
          signal: status.signal ?? null,
          output: output.output,
          truncated: output.truncated,
          timedOut: Option.isNone(exited)
        })
      }))
    }
  }
  return { terminal, attach: (next) => void (reach = next) }
}
