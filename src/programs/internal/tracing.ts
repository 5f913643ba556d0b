/**
 * Spans of a turn's steps, made only when someone can see them (see the design doc's
 * "Performance" section).
 */
import * as Effect from "effect/Effect"
import * as Tracer from "effect/Tracer"

/** Spans on the loop's hot path (turn, provider call, tool call) skip capturing a stack trace each time. */
export const noStackTrace: Tracer.TraceOptions = { captureStackTrace: false }

/** Whether spans made on this fiber reach a tracing backend (anything but Effect's `nativeTracer`). */
export const isTraced: Effect.Effect<boolean> = Effect.map(Effect.tracer, (tracer) => tracer !== Tracer.nativeTracer)

/**
 * `body` in a span named `name` with `attributes()` and, on success, `annotate(result)`. Only for
 * a traced turn: an untraced one runs its steps as they are, with no closure made for a span.
 */
export const spanned = <A, E, R>(
  name: string,
  attributes: () => Record<string, unknown>,
  body: () => Effect.Effect<A, E, R>,
  annotate?: (result: A) => Record<string, unknown> | undefined
): Effect.Effect<A, E, R> => {
  const effect = Effect.suspend(body)
  const annotated = annotate === undefined ? effect : Effect.tap(effect, (result) => {
    const values = annotate(result)
    return values === undefined ? Effect.void : Effect.annotateCurrentSpan(values)
  })
  return annotated.pipe(Effect.withSpan(name, { attributes: attributes() }, noStackTrace))
}
