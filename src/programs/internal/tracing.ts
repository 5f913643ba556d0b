/**
 * Spans of a turn's steps, made only when someone can see them (see the design doc's
 * "Performance" section), named and annotated as OpenTelemetry's GenAI conventions say:
 * `invoke_agent {agent}`, `chat {model}` (a CLIENT span), `execute_tool {tool}`.
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Tracer from "effect/Tracer"

/** Spans on the loop's hot path (turn, provider call, tool call) skip capturing a stack trace each time. */
export const noStackTrace: Tracer.TraceOptions = { captureStackTrace: false }

/** Whether spans made on this fiber reach a tracing backend (anything but Effect's `nativeTracer`). */
export const isTraced: Effect.Effect<boolean> = Effect.map(Effect.tracer, (tracer) => tracer !== Tracer.nativeTracer)

/** Why a step that returned a result failed: `error.type` and the span's status message. */
export interface SpanFailure {
  readonly type: string
  readonly message: string
}

/**
 * Ends a span in error for a step that did not fail as an effect (a tool's error result, a
 * failed turn): a trace viewer shows the step red. Caught right outside the span.
 */
class FailedStep<A> extends Data.TaggedError("FailedStep")<{ readonly message: string; readonly result: A }> {}

/** Options of `spanned`. */
export interface SpanOptions<A> {
  /** The attributes known once the step has its result. */
  readonly annotate?: (result: A) => Record<string, unknown> | undefined
  /** Whether the result is a failure, and which (sets `error.type` and the span's error status). */
  readonly failure?: (result: A) => SpanFailure | undefined
  readonly kind?: Tracer.SpanKind
}

/**
 * `body` in a span named `name` with `attributes()`, annotated and marked failed from its result
 * as `options` say. Only for a traced turn: an untraced one runs its steps as they are, with no
 * closure made for a span.
 */
export const spanned = <A, E, R>(
  name: string,
  attributes: () => Record<string, unknown>,
  body: () => Effect.Effect<A, E, R>,
  options: SpanOptions<A> = {}
): Effect.Effect<A, E, R> => {
  const { annotate, failure } = options
  const effect = Effect.suspend(body)
  const annotated = annotate === undefined && failure === undefined ? effect : Effect.flatMap(effect, (result) => {
    const values = annotate?.(result)
    const failed = failure?.(result)
    const annotations = failed === undefined ? values : { ...values, "error.type": failed.type }
    const annotating = annotations === undefined ? Effect.void : Effect.annotateCurrentSpan(annotations)
    return failed === undefined ? Effect.as(annotating, result) : Effect.andThen(annotating, Effect.fail(new FailedStep({ message: failed.message, result })))
  })
  return annotated.pipe(
    Effect.withSpan(name, { attributes: attributes(), ...(options.kind === undefined ? {} : { kind: options.kind }) }, noStackTrace),
    Effect.catchIf((e): e is FailedStep<A> => e instanceof FailedStep, (e) => Effect.succeed(e.result))
  ) as Effect.Effect<A, E, R>
}
