/**
 * Running one file-hook script: event JSON on stdin, bounded stdout/stderr, killed at its timeout.
 *
 * The time limit is on the Clock, so tests drive it with `TestClock`. When it passes, the
 * process scope closes: the spawner signals the script's process group (SIGTERM, SIGKILL after
 * a grace period) and waits for it to exit.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ChildProcess from "effect/process/ChildProcess"
import type * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import { type KnownSecrets, scrubbedEnv } from "../../tools/secretEnv.ts"

/** Most bytes kept of each of stdout and stderr; the rest is read and discarded. */
export const outputLimit = 1024 * 1024

/** How long a script that ignores SIGTERM gets before SIGKILL. */
export const killGrace: Duration.Duration = Duration.millis(500)

/** A script that finished, whatever its exit code. */
export interface ScriptResult {
  readonly exitCode: number
  readonly stdout: string
  readonly stderr: string
}

/** The script could not be run, or did not finish in time. */
export class ScriptFailure extends Schema.TaggedError<ScriptFailure>()("ScriptFailure", { message: Schema.String }) {}

const collect = <E>(stream: Stream.Stream<Uint8Array, E>): Effect.Effect<string, E> =>
  Effect.map(
    Stream.runFold(stream, () => ({ chunks: [] as Array<Uint8Array>, size: 0 }), (acc, chunk) => {
      if (acc.size < outputLimit) {
        const kept = chunk.subarray(0, outputLimit - acc.size)
        acc.chunks.push(kept)
        acc.size += kept.length
      }
      return acc
    }),
    (acc) => Buffer.concat(acc.chunks).toString("utf8")
  )

/**
 * The environment a hook script runs with: this process's, scrubbed exactly as `exec`'s is
 * (`scrubbedEnv`: no variable whose name or value looks like a credential, none holding a known
 * secret), so that a hook, whose output can reach the model, holds no key it did not ask for;
 * the variables named in `pass` are given all the same.
 */
export const hookEnv = (secrets: KnownSecrets, pass: Iterable<string> = []): Record<string, string> =>
  scrubbedEnv(process.env, { secrets, pass })

/** Runs `command` (argv) in `cwd` with `input` on stdin and exactly `env`, within `timeout`. */
export const run = (options: {
  readonly command: ReadonlyArray<string>
  readonly cwd: string
  readonly input: string
  readonly env: Record<string, string>
  readonly timeout: Duration.Duration
}): Effect.Effect<ScriptResult, ScriptFailure, ChildProcessSpawner.ChildProcessSpawner> => {
  const [program, ...args] = options.command
  return Effect.scoped(
    Effect.gen(function*() {
      const handle = yield* ChildProcess.make(program!, args, {
        cwd: options.cwd,
        env: options.env,
        extendEnv: false,
        stdin: Stream.make(new TextEncoder().encode(options.input)),
        forceKillAfter: killGrace
      })
      const [stdout, stderr, exitCode] = yield* Effect.all(
        [collect(handle.stdout), collect(handle.stderr), handle.exitCode],
        { concurrency: "unbounded" }
      )
      return { exitCode: Number(exitCode), stdout, stderr }
    })
  ).pipe(
    Effect.mapError((error) => new ScriptFailure({ message: `could not run ${options.command.join(" ")}: ${error.message}` })),
    Effect.timeoutOption(options.timeout),
    Effect.flatMap(Option.match({
      onNone: () => Effect.fail(new ScriptFailure({ message: `timed out after ${Duration.toMillis(options.timeout)}ms` })),
      onSome: Effect.succeed
    }))
  )
}
