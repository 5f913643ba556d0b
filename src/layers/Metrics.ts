/**
 * The loop's metrics, as Effect `Metric`s, derived in one place: an observer subscribed to the
 * event bus. The engine itself records nothing; a loop without this layer pays nothing, and one
 * with it pays one lossless subscription that takes only the six kinds it counts (never
 * `LLMDelta`).
 *
 * The metrics land in the `Metric.MetricRegistry` of the context the layer is built in, where
 * `PrometheusMetrics.format` and the OTLP metrics exporter read them.
 */
import * as Context from "effect/Context"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Schema from "effect/Schema"
import type * as Http from "node:http"
import type { AgentEvent, EventKind, EventOf } from "../domain/Event.ts"
import type { Usage } from "../domain/Usage.ts"
import { type DropCounts, EventBus, type EventBusShape } from "../services/EventBus.ts"
import { metricName, withHelp } from "./internal/prometheusText.ts"

/** Latency buckets in milliseconds: 10 ms to about 10 minutes (of the deprecated `_ms` histograms). */
const latencyBoundaries = Metric.exponentialBoundaries({ start: 10, factor: 2, count: 17 })
/** Latency buckets in seconds: 10 ms to about 10 minutes. */
const secondsBoundaries = Metric.exponentialBoundaries({ start: 0.01, factor: 2, count: 17 })
/** The buckets the GenAI conventions advise for `gen_ai.client.token.usage`. */
const tokenBoundaries = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]

/** A metric's unit (UCUM) as the OTLP exporter reads it; the Prometheus formatter leaves it out of the labels. */
const unit = (u: string) => ({ attributes: { unit: u } })

/** Turns that ended, by `status` and `depth` (0: a session's turn, more: a sub-turn). */
export const turns = Metric.counter("agent_loop_turns_total", { description: "Turns that ended, by status", incremental: true, ...unit("{turn}") })
/** Iterations (model-calling rounds) of the turns that ended. */
export const iterations = Metric.counter("agent_loop_iterations_total", {
  description: "Iterations of the turns that ended",
  incremental: true,
  ...unit("{iteration}")
})
/** Tool calls by `tool` and `outcome` (`ok`, `error` or `skipped`). */
export const toolCalls = Metric.counter("agent_loop_tool_calls_total", { description: "Tool calls, by tool and outcome", incremental: true, ...unit("{call}") })
/** Tokens of provider calls by `kind` (`input`, `output`, `cached_input`, `cache_write`, `reasoning`) and `model`. */
export const tokens = Metric.counter("agent_loop_tokens_total", { description: "Tokens of provider calls, by kind and model", incremental: true, ...unit("{token}") })
/** Cost of provider calls in US dollars, by `model`, where a price is known. */
export const costUsd = Metric.counter("agent_loop_cost_usd_total", { description: "Cost of provider calls in US dollars", incremental: true, ...unit("{USD}") })
/** Provider calls that failed and were retried. */
export const retries = Metric.counter("agent_loop_retries_total", { description: "Provider calls retried", incremental: true, ...unit("{retry}") })
/** Events a subscriber lost to a full buffer, by event `kind`. */
export const eventsDropped = Metric.counter("agent_loop_events_dropped_total", {
  description: "Events lost to full subscriber buffers, by kind",
  incremental: true,
  ...unit("{event}")
})
/** Turns running now (sub-turns included). */
export const turnsInFlight = Metric.gauge("agent_loop_turns_in_flight", { description: "Turns running now", ...unit("{turn}") })
/** How long turns took (seconds, on the loop's Clock), by `status`. */
export const turnSeconds = Metric.histogram("agent_loop_turn_duration_seconds", {
  description: "Turn duration in seconds",
  boundaries: secondsBoundaries,
  ...unit("s")
})
/** How long provider calls took (seconds, on the loop's Clock, retries included), by `model`. */
export const modelCallSeconds = Metric.histogram("agent_loop_model_call_duration_seconds", {
  description: "Provider call duration in seconds (retries included)",
  boundaries: secondsBoundaries,
  ...unit("s")
})
/** Tokens of each provider call, by `gen_ai.token.type` (`input`, `output`), as the GenAI conventions define it. */
export const genAiTokenUsage = Metric.histogram("gen_ai.client.token.usage", {
  description: "Number of input and output tokens used per model call",
  boundaries: tokenBoundaries,
  ...unit("{token}")
})
/** How long each provider call took, in seconds, as the GenAI conventions define it. */
export const genAiOperationDuration = Metric.histogram("gen_ai.client.operation.duration", {
  description: "GenAI operation duration in seconds",
  boundaries: secondsBoundaries,
  ...unit("s")
})
/** @deprecated Use `turnSeconds` (`agent_loop_turn_duration_seconds`); kept for one minor version. */
export const turnDuration = Metric.histogram("agent_loop_turn_duration_ms", {
  description: "Deprecated: use agent_loop_turn_duration_seconds. Turn duration in milliseconds",
  boundaries: latencyBoundaries,
  ...unit("ms")
})
/** @deprecated Use `modelCallSeconds` (`agent_loop_model_call_duration_seconds`); kept for one minor version. */
export const modelCallDuration = Metric.histogram("agent_loop_model_call_duration_ms", {
  description: "Deprecated: use agent_loop_model_call_duration_seconds. Provider call duration in milliseconds",
  boundaries: latencyBoundaries,
  ...unit("ms")
})

/** The kinds the observer counts. */
export const observedKinds: ReadonlyArray<EventKind> = ["TurnStart", "TurnEnd", "LLMResponse", "LLMRetry", "ToolExecEnd", "ToolExecSkipped"]

const add = (metric: Metric.Counter<number>, value: number, attributes: Metric.Metric.Attributes) =>
  Metric.update(Metric.withAttributes(metric, attributes), value)

const usageKinds: ReadonlyArray<readonly [keyof Usage, string]> = [
  ["inputTokens", "input"],
  ["outputTokens", "output"],
  ["cachedInputTokens", "cached_input"],
  ["cacheWriteTokens", "cache_write"],
  ["reasoningTokens", "reasoning"]
]

const recordResponse = (event: EventOf<"LLMResponse">) =>
  Effect.gen(function*() {
    for (const [field, kind] of usageKinds) {
      const n = event.usage[field]
      if (n !== undefined && n > 0) yield* add(tokens, n, { kind, model: event.model })
    }
    if (event.usage.costUsd !== undefined && event.usage.costUsd > 0) yield* add(costUsd, event.usage.costUsd, { model: event.model })
    yield* Metric.update(Metric.withAttributes(modelCallDuration, { model: event.model }), event.durationMs)
    yield* Metric.update(Metric.withAttributes(modelCallSeconds, { model: event.model }), event.durationMs / 1000)
    const call = { "gen_ai.operation.name": "chat", "gen_ai.request.model": event.model }
    yield* Metric.update(Metric.withAttributes(genAiOperationDuration, call), event.durationMs / 1000)
    yield* Metric.update(Metric.withAttributes(genAiTokenUsage, { ...call, "gen_ai.token.type": "input" }), event.usage.inputTokens)
    yield* Metric.update(Metric.withAttributes(genAiTokenUsage, { ...call, "gen_ai.token.type": "output" }), event.usage.outputTokens)
  })

/** What `recordDrops` has counted so far, per bus (a scrape and the observer share it). */
const dropsSeen = new WeakMap<EventBusShape, Partial<Record<EventKind, number>>>()

/**
 * Brings the drop counter up to date with `bus`'s losses. The bus reports totals; the counter
 * takes their growth, so it stays a counter (a rate in Prometheus).
 */
export const recordDrops = (bus: EventBusShape): Effect.Effect<void> =>
  Effect.flatMap(bus.dropped, (counts: DropCounts) => {
    let seen = dropsSeen.get(bus)
    if (seen === undefined) dropsSeen.set(bus, seen = {})
    const grown: Array<[EventKind, number]> = []
    for (const [kind, total] of Object.entries(counts) as Array<[EventKind, number]>) {
      if (total > (seen[kind] ?? 0)) grown.push([kind, total - (seen[kind] ?? 0)])
      seen[kind] = total
    }
    return Effect.forEach(grown, ([kind, n]) => add(eventsDropped, n, { kind }), { discard: true })
  })

/** Records one event. `inFlight` holds the running-turn count the gauge is set from. */
const record = (event: AgentEvent, inFlight: { n: number }, drops: Effect.Effect<void>): Effect.Effect<void> => {
  switch (event._tag) {
    case "TurnStart":
      inFlight.n++
      return Metric.update(turnsInFlight, inFlight.n)
    case "TurnEnd":
      inFlight.n = Math.max(0, inFlight.n - 1)
      return Effect.all([
        Metric.update(turnsInFlight, inFlight.n),
        add(turns, 1, { status: event.status, depth: String(event.depth) }),
        add(iterations, event.iterations, {}),
        Metric.update(Metric.withAttributes(turnDuration, { status: event.status }), event.durationMs),
        Metric.update(Metric.withAttributes(turnSeconds, { status: event.status }), event.durationMs / 1000),
        drops
      ], { discard: true })
    case "LLMResponse":
      return recordResponse(event)
    case "LLMRetry":
      return add(retries, 1, {})
    case "ToolExecEnd":
      return add(toolCalls, 1, { tool: event.toolName, outcome: event.isError ? "error" : "ok" })
    case "ToolExecSkipped":
      return add(toolCalls, 1, { tool: event.toolName, outcome: "skipped" })
    default:
      return Effect.void
  }
}

/**
 * Subscribes to `bus` now (so no turn started after this is missed) and records its events into
 * the metrics on a fiber owned by the current scope. When the scope closes, what is still
 * buffered is recorded before the subscription ends, so an exporter flushing after it sees the
 * last turn. One observer per bus: a second would count everything twice.
 */
export const observe = Effect.fnUntraced(function*(bus: EventBusShape) {
  const subscription = yield* bus.subscribe({ kinds: observedKinds, strategy: "lossless" })
  const inFlight = { n: 0 }
  const drops = recordDrops(bus)
  yield* Effect.addFinalizer(() =>
    Effect.flatMap(subscription.takeAll, (rest) => Effect.forEach(rest, (event) => record(event, inFlight, drops), { discard: true }))
  )
  yield* subscription.take.pipe(
    Effect.flatMap((event) => Effect.uninterruptible(record(event, inFlight, drops))),
    Effect.forever,
    Effect.forkScoped
  )
})

/** Records the loop's metrics from its event bus for as long as the layer lives (once per loop). */
export const layer: Layer.Layer<never, never, EventBus> = Layer.effectDiscard(Effect.flatMap(EventBus, observe))

/** The metrics endpoint could not listen (the port is taken, the host is not this machine's). */
export class MetricsEndpointError extends Schema.TaggedError<MetricsEndpointError>()("MetricsEndpointError", {
  message: Schema.String
}) {}

/** Where the Prometheus endpoint listens. */
export interface EndpointOptions {
  readonly port: number
  /** Default `127.0.0.1`: the metrics name tools and models, so they are not offered to the network unasked. */
  readonly host?: string | undefined
  /** More `GET` paths the server answers (e.g. a runner's `/healthz`): each gives a status and a JSON body. */
  readonly routes?: Readonly<Record<string, Effect.Effect<{ readonly status: number; readonly body: unknown }>>> | undefined
}

/**
 * Serves the metrics at `GET /metrics` in the Prometheus text format, on a plain `node:http`
 * server that closes with the layer. `port` 0 picks a free port; `Endpoint` says which. It only
 * reads the metrics: `layer` (once per loop) records them. `routes` adds JSON endpoints.
 */
export const layerPrometheus = (options: EndpointOptions): Layer.Layer<Endpoint, MetricsEndpointError, EventBus> =>
  Layer.effect(Endpoint, Effect.gen(function*() {
    const refresh = recordDrops(yield* EventBus)
    // loaded here, so a loop without the endpoint never loads the formatter; nor node:http, whose
    // module namespace builds Node's own fetch (undici) on import
    const { formatUnsafe } = yield* Effect.promise(() => import("effect/observability/PrometheusMetrics"))
    const { createServer }: typeof Http = yield* Effect.promise(() => import("node:http"))
    const context = yield* Effect.context<never>()
    // a route's fiber is the layer's: interrupted when it closes, rather than left running on its own
    const runRoute = yield* FiberSet.makeRuntime<never>()
    const host = options.host ?? "127.0.0.1"
    const json = (response: Http.ServerResponse, status: number, body: unknown) =>
      void response.writeHead(status, { "content-type": "application/json" }).end(`${JSON.stringify(body)}\n`)
    const server = createServer((request, response) => {
      const path = (request.url ?? "").split("?")[0] ?? ""
      const route = request.method === "GET" && Object.hasOwn(options.routes ?? {}, path) ? options.routes![path] : undefined
      if (route !== undefined) {
        runRoute(Effect.matchCause(route, {
          onSuccess: ({ body, status }) => json(response, status, body),
          // a route that dies still answers; one interrupted (the layer closing) has its connection closed
          onFailure: (cause) => Cause.hasInterruptsOnly(cause) ? void response.destroy() : json(response, 500, { error: "the route failed" })
        }))
        return
      }
      if (request.method !== "GET" || path !== "/metrics") {
        response.writeHead(404, { "content-type": "text/plain" }).end("not found\n")
        return
      }
      Effect.runSyncWith(context)(refresh)
      const body = withHelp(formatUnsafe(context, { metricNameMapper: metricName }))
      response.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" }).end(body)
    })
    const port = yield* Effect.acquireRelease(
      Effect.callback<number, MetricsEndpointError>((resume) => {
        const failed = (error: Error) => resume(Effect.fail(new MetricsEndpointError({ message: `metrics endpoint on ${host}:${options.port}: ${error.message}` })))
        server.once("error", failed)
        server.listen(options.port, host, () => {
          server.off("error", failed)
          const address = server.address()
          resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : options.port))
        })
      }),
      () => Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
    )
    return { host, port }
  }))

/** Where the Prometheus endpoint of `layerPrometheus` listens. */
export class Endpoint extends Context.Service<Endpoint, { readonly host: string; readonly port: number }>()(
  "effect-agent-loop/Metrics/Endpoint"
) {}
