/**
 * Matching a model-chosen regular expression against lines without freezing the process.
 *
 * JavaScript's regex engine backtracks: a pattern such as `(a+)+$` takes exponential time on a line
 * of a's that does not end as it wants, and while it runs on the main thread nothing else runs —
 * not the loop, not a timer, not a signal handler. So matching happens in a worker thread, and
 * each request has a deadline on the Effect `Clock`: when it passes, the worker is terminated
 * (V8 stops a running regex for that) and the request fails with `RegexTimeout`.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { Worker } from "node:worker_threads"
import { ToolError } from "../domain/errors.ts"

/** The name of the worker threads (Linux shows it as the thread's name). */
export const REGEX_THREAD_NAME = "grep-regex"

/** The pattern did not finish within its deadline; the worker running it was terminated. */
export class RegexTimeout extends Schema.TaggedError<RegexTimeout>()("RegexTimeout", { timeout: Schema.Duration }) {}

/** A match: the 0-based line index and the line, cut to the maximum length with `…`. */
export type LineMatch = readonly [index: number, line: string]

/** A compiled pattern, matched in a worker. */
export interface LineMatcher {
  /** The first `limit` lines of `text` (split at LF or CRLF) that match. */
  readonly match: (text: string, limit: number) => Effect.Effect<ReadonlyArray<LineMatch>, RegexTimeout | ToolError>
}

/** What to match and how long one `match` may take. */
export interface LineMatcherOptions {
  readonly source: string
  readonly flags: string
  readonly timeout: Duration.Input
  readonly maxLineLength: number
}

/** The worker's program: plain JavaScript, so it runs the same from source and from a build. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads")
const regex = new RegExp(workerData.source, workerData.flags)
const max = workerData.maxLineLength
parentPort.on("message", ({ id, text, limit }) => {
  const lines = text.split(/\\r?\\n/)
  const found = []
  for (let i = 0; i < lines.length && found.length < limit; i++) {
    const line = lines[i]
    if (regex.test(line)) found.push([i, line.length > max ? line.slice(0, max) + "\\u2026" : line])
  }
  parentPort.postMessage({ id, found })
})
`

/**
 * A matcher for one pattern (already checked to compile). Its worker starts with the first
 * `match`, is replaced after a timeout, and is terminated when the scope closes.
 */
export const makeLineMatcher = (options: LineMatcherOptions): Effect.Effect<LineMatcher, never, Scope.Scope> =>
  Effect.gen(function*() {
    const timeout = Duration.fromInputUnsafe(options.timeout)
    let worker: Worker | undefined
    let nextId = 0

    const stop = Effect.suspend(() => {
      const running = worker
      worker = undefined
      return running === undefined ? Effect.void : Effect.promise(() => running.terminate())
    })
    yield* Effect.addFinalizer(() => stop)

    const started = (): Worker => {
      if (worker !== undefined) return worker
      const { source, flags, maxLineLength } = options
      const created = new Worker(WORKER_SOURCE, { eval: true, name: REGEX_THREAD_NAME, workerData: { source, flags, maxLineLength } })
      // the scope terminates it; it must never be what keeps the process alive
      created.unref()
      worker = created
      return created
    }

    const request = (text: string, limit: number) =>
      Effect.callback<ReadonlyArray<LineMatch>, ToolError>((resume) => {
        const current = started()
        const id = nextId++
        const onMessage = (message: { readonly id: number; readonly found: ReadonlyArray<LineMatch> }) => {
          if (message.id !== id) return
          cleanup()
          resume(Effect.succeed(message.found))
        }
        const onError = (error: Error) => {
          cleanup()
          worker = undefined
          resume(Effect.fail(new ToolError({ message: `The pattern could not be matched: ${error.message}` })))
        }
        const onExit = () => onError(new Error("the matching thread stopped"))
        const cleanup = () => {
          current.off("message", onMessage)
          current.off("error", onError)
          current.off("exit", onExit)
        }
        current.on("message", onMessage)
        current.on("error", onError)
        current.on("exit", onExit)
        current.postMessage({ id, text, limit })
        return Effect.sync(cleanup)
      })

    return {
      match: (text, limit) =>
        request(text, limit).pipe(
          Effect.timeoutOrElse({
            duration: timeout,
            orElse: () => Effect.andThen(stop, Effect.fail(new RegexTimeout({ timeout })))
          })
        )
    }
  })
