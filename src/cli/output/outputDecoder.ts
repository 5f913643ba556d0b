/**
 * Decoding a typed answer against the user's `--output-schema` in a worker thread, under the same
 * deadline as `grep`'s patterns: a `pattern` in the schema is a regular expression run on the
 * model's text, and one such as `^(a+)+$` takes exponential time on a crafted answer. While it
 * runs on the main thread nothing else runs (not the loop, not a timer, not a signal handler), so
 * the whole decode happens in a worker; past the deadline the worker is terminated and the answer
 * is rejected, which the model is told like any other mismatch.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaTransformation from "effect/SchemaTransformation"
import { Worker } from "node:worker_threads"

/** The name of the worker threads (Linux shows it as the thread's name). */
export const DECODER_THREAD_NAME = "output-schema"

/** The worker's program: plain JavaScript, so it runs the same from source and from a build. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads")
const decoding = import(workerData.effect).then(({ JsonSchema, Schema, SchemaRepresentation }) => {
  const json = workerData.json
  const document = workerData.draft07 ? JsonSchema.fromSchemaDraft07(json) : JsonSchema.fromSchemaDraft2020_12(json)
  return Schema.decodeUnknownExit(SchemaRepresentation.fromJsonSchemaDocument(document, { patterns: "apply" }))
})
parentPort.once("message", async (value) => {
  try {
    const exit = (await decoding)(value)
    if (exit._tag === "Success") return parentPort.postMessage({ ok: true, value: exit.value })
    const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
    parentPort.postMessage({ ok: false, message: failure ? failure.error.message : String(exit.cause) })
  } catch (error) {
    parentPort.postMessage({ ok: false, message: error instanceof Error ? error.message : String(error) })
  }
})
`

/** What one decode in the worker gave. */
type Outcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly message: string }

/** Where the worker imports Effect from: the copy this module uses. */
const effectUrl = import.meta.resolve("effect")

/**
 * Decodes `value` against the JSON Schema `json` in a fresh worker, failing with the reason when
 * it does not match or when the decode takes longer than `timeout` (on the Clock). The worker is
 * terminated when the decode ends, whichever way.
 */
export const decodeInWorker = (json: unknown, draft07: boolean, value: unknown, timeout: Duration.Duration) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const worker = new Worker(WORKER_SOURCE, { eval: true, name: DECODER_THREAD_NAME, workerData: { json, draft07, effect: effectUrl } })
      // its owner terminates it; it must never be what keeps the process alive
      worker.unref()
      return worker
    }),
    (worker) =>
      Effect.callback<unknown, string>((resume) => {
        const onMessage = (outcome: Outcome) => resume(outcome.ok ? Effect.succeed(outcome.value) : Effect.fail(outcome.message))
        const onError = (error: Error) => resume(Effect.fail(`the answer could not be checked: ${error.message}`))
        worker.once("message", onMessage)
        worker.once("error", onError)
        worker.postMessage(value)
        return Effect.sync(() => {
          worker.off("message", onMessage)
          worker.off("error", onError)
        })
      }).pipe(Effect.timeoutOrElse({
        duration: timeout,
        orElse: () => Effect.fail(`checking the answer against the schema took longer than ${Duration.toMillis(timeout)} ms (a pattern too slow on it?)`)
      })),
    (worker) => Effect.promise(() => worker.terminate())
  )

/** A Schema that decodes through `decodeInWorker` (the typed answer's Schema for `--output-schema`). */
export const workerSchema = (json: unknown, draft07: boolean, timeout: Duration.Duration): Schema.Decoder<unknown> =>
  Schema.Unknown.pipe(Schema.decodeTo(
    Schema.Unknown,
    SchemaTransformation.transformEffect({
      decode: (value: unknown) =>
        decodeInWorker(json, draft07, value, timeout).pipe(
          Effect.mapError((message) => new SchemaIssue.InvalidValue({ message }))
        ),
      encode: (value: unknown) => Effect.succeed(value)
    })
  ))
