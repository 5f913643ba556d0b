import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Metric, Schema, Scope } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { TestClock } from "effect/testing"
import { AgentEvent, AgentLoop, EventBus, EventBusLive, Metrics, RateLimited, Tool } from "effect-agent-loop"
import { observe } from "../../src/layers/Metrics.ts"
import * as Testing from "effect-agent-loop/testing"

/** One sample of the Prometheus text format. */
interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

/**
 * A strict parser of the Prometheus text exposition format (0.0.4): every line is a `# HELP`,
 * a `# TYPE` (before its family's samples, at most once per family) or a sample whose name
 * belongs to the declared family; label values are quoted with `\\`, `\"` and `\n` escapes;
 * anything else throws.
 */
const parsePrometheus = (text: string): { readonly types: ReadonlyMap<string, string>; readonly samples: ReadonlyArray<Sample> } => {
  if (text.length > 0 && !text.endsWith("\n")) throw new Error("the exposition does not end with a newline")
  const types = new Map<string, string>()
  const samples: Array<Sample> = []
  const name = "[a-zA-Z_:][a-zA-Z0-9_:]*"
  const sampleLine = new RegExp(`^(${name})(?:\\{(.*)\\})? (\\S+)(?: (-?\\d+))?$`)
  const label = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)/
  for (const line of text.split("\n").slice(0, -1)) {
    const comment = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line)
    if (comment !== null) {
      const [, keyword, family, rest] = comment
      if (keyword === "TYPE") {
        if (!["counter", "gauge", "histogram", "summary", "untyped"].includes(rest!)) throw new Error(`bad type: ${line}`)
        if (types.has(family!)) throw new Error(`type declared twice: ${line}`)
        if (samples.some((s) => s.name === family || s.name.startsWith(`${family}_`))) throw new Error(`type after samples: ${line}`)
        types.set(family!, rest!)
      }
      continue
    }
    if (line.startsWith("#") || line.trim() === "") throw new Error(`bad line: ${JSON.stringify(line)}`)
    const match = sampleLine.exec(line)
    if (match === null) throw new Error(`bad sample: ${JSON.stringify(line)}`)
    const [, sampleName, labelText = "", valueText] = match
    const labels: Record<string, string> = {}
    let rest = labelText
    while (rest.length > 0) {
      const l = label.exec(rest)
      if (l === null) throw new Error(`bad labels: ${line}`)
      if (l[1]! in labels) throw new Error(`label twice: ${line}`)
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c))
      rest = rest.slice(l[0].length)
    }
    const value = valueText === "+Inf" ? Infinity : valueText === "-Inf" ? -Infinity : valueText === "NaN" ? NaN : Number(valueText)
    if (!/^[-+]?(\d+\.?\d*(e[-+]?\d+)?|\.\d+|Inf|NaN)$/i.test(valueText!) || (Number.isNaN(value) && valueText !== "NaN")) {
      throw new Error(`bad value: ${line}`)
    }
    const family = [...types.keys()].find((f) => [f, `${f}_bucket`, `${f}_sum`, `${f}_count`].includes(sampleName!))
    if (family === undefined) throw new Error(`sample of no declared family: ${line}`)
    samples.push({ name: sampleName!, labels, value })
  }
  return { types, samples }
}

/** The families of a Prometheus text whose `# TYPE` has no `# HELP` right before it. */
const helpless = (text: string): ReadonlyArray<string> => {
  const lines = text.split("\n")
  return lines.flatMap((line, i) => {
    const type = /^# TYPE (\S+) /.exec(line)
    return type !== null && !(lines[i - 1] ?? "").startsWith(`# HELP ${type[1]} `) ? [type[1]!] : []
  })
}

const value = (samples: ReadonlyArray<Sample>, name: string, labels: Record<string, string> = {}): number | undefined =>
  samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value

const echo = Tool.make({
  name: "echo",
  description: "echoes",
  parameters: Schema.Struct({ text: Schema.String }),
  execute: ({ text }) => Effect.succeed(text)
})
const broken = Tool.make({
  name: "broken",
  description: "always fails",
  parameters: Schema.Struct({}),
  execute: () => Effect.die(new Error("broken on purpose"))
})

const usage1 = { inputTokens: 100, outputTokens: 20, cachedInputTokens: 40, reasoningTokens: 5, costUsd: 0.25 }
const usage2 = { inputTokens: 150, outputTokens: 10, costUsd: 0.5 }
/** Iteration 1 calls two tools (one fails); iteration 2 is rate-limited once, then answers. */
const script = [
  { toolCalls: [{ id: "a", name: "echo", arguments: { text: "hi" } }, { id: "b", name: "broken", arguments: {} }], usage: usage1, delay: "300 millis" },
  { error: new RateLimited({ message: "slow down" }) },
  { content: "done", usage: usage2, delay: "200 millis" }
] as const

/** The loop with the metrics observer and endpoint, each test on its own registry. */
const loop = (registry: Map<string, any> = new Map()) =>
  Layer.mergeAll(Metrics.layerPrometheus({ port: 0 }).pipe(Layer.provideMerge(Metrics.layer))).pipe(
    Layer.provideMerge(Testing.layer({ tools: [echo, broken], script: [...script], config: { retry: { jitter: false, baseDelay: 1000 } } })),
    Layer.provide(Layer.succeed(Metric.MetricRegistry, registry))
  )

const scrape = (port: number) =>
  Effect.promise(async () => {
    const response = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(10_000) })
    return { contentType: response.headers.get("content-type"), text: await response.text() }
  })

describe("metrics", () => {
  it.effect("a scripted turn's counters, tokens, cost, retries and latencies reach /metrics in the Prometheus text format", () =>
    Effect.gen(function*() {
      const { port } = yield* Metrics.Endpoint
      const agent = yield* AgentLoop
      const fiber = yield* Effect.forkChild(agent.turn("s", "go"))
      yield* TestClock.adjust(300)
      // mid-turn: one turn in flight
      yield* Testing.settled(Effect.map(scrape(port), ({ text }) => value(parsePrometheus(text).samples, "agent_loop_turns_in_flight") === 1))
      yield* TestClock.adjust(1000) // the retry's delay
      yield* TestClock.adjust(200)
      const result = yield* Fiber.join(fiber)
      expect(result.status).toBe("completed")
      yield* TestClock.adjust(0)

      const { contentType, text } = yield* scrape(port)
      expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/)
      const { types, samples } = parsePrometheus(text)
      expect(types.get("agent_loop_turns_total")).toBe("counter")
      expect(types.get("agent_loop_turns_in_flight")).toBe("gauge")
      expect(types.get("agent_loop_turn_duration_ms")).toBe("histogram")
      expect(value(samples, "agent_loop_turns_total", { status: "completed", depth: "0" })).toBe(1)
      expect(value(samples, "agent_loop_turns_in_flight")).toBe(0)
      expect(value(samples, "agent_loop_iterations_total")).toBe(2)
      expect(value(samples, "agent_loop_tool_calls_total", { tool: "echo", outcome: "ok" })).toBe(1)
      expect(value(samples, "agent_loop_tool_calls_total", { tool: "broken", outcome: "error" })).toBe(1)
      expect(value(samples, "agent_loop_tokens_total", { kind: "input" })).toBe(250)
      expect(value(samples, "agent_loop_tokens_total", { kind: "output" })).toBe(30)
      expect(value(samples, "agent_loop_tokens_total", { kind: "cached_input" })).toBe(40)
      expect(value(samples, "agent_loop_tokens_total", { kind: "reasoning" })).toBe(5)
      expect(value(samples, "agent_loop_cost_usd_total")).toBe(0.75)
      expect(value(samples, "agent_loop_retries_total")).toBe(1)
      // the turn took 300 + 1000 + 200 ms on the Clock; the model calls 300 and 1200 (retry included)
      expect(value(samples, "agent_loop_turn_duration_ms_sum", { status: "completed" })).toBe(1500)
      expect(value(samples, "agent_loop_turn_duration_ms_count", { status: "completed" })).toBe(1)
      expect(value(samples, "agent_loop_model_call_duration_ms_count")).toBe(2)
      expect(value(samples, "agent_loop_model_call_duration_ms_sum")).toBe(1500)
      expect(value(samples, "agent_loop_turn_duration_ms_bucket", { status: "completed", le: "1280" })).toBe(0)
      expect(value(samples, "agent_loop_turn_duration_ms_bucket", { status: "completed", le: "2560" })).toBe(1)
      expect(value(samples, "agent_loop_turn_duration_ms_bucket", { status: "completed", le: "+Inf" })).toBe(1)
      // the same durations in seconds, beside the deprecated _ms histograms
      expect(types.get("agent_loop_turn_duration_seconds")).toBe("histogram")
      expect(value(samples, "agent_loop_turn_duration_seconds_sum", { status: "completed" })).toBe(1.5)
      expect(value(samples, "agent_loop_model_call_duration_seconds_sum")).toBe(1.5)
      expect(value(samples, "agent_loop_model_call_duration_seconds_count")).toBe(2)
      // the GenAI conventions' client metrics: tokens per call by type, operation duration in seconds
      expect(types.get("gen_ai_client_token_usage")).toBe("histogram")
      expect(value(samples, "gen_ai_client_token_usage_sum", { gen_ai_token_type: "input", gen_ai_operation_name: "chat" })).toBe(250)
      expect(value(samples, "gen_ai_client_token_usage_sum", { gen_ai_token_type: "output" })).toBe(30)
      expect(value(samples, "gen_ai_client_token_usage_count", { gen_ai_token_type: "input" })).toBe(2)
      expect(value(samples, "gen_ai_client_operation_duration_seconds_sum", { gen_ai_request_model: "test-model" })).toBe(1.5)
      // every family has its HELP and TYPE, and no unit leaks into the labels
      expect(helpless(text)).toEqual([])
      expect(samples.some((s) => "unit" in s.labels)).toBe(false)
      // no loss, and nothing but /metrics is served
      expect(value(samples, "agent_loop_events_dropped_total")).toBeUndefined()
      const other = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(10_000) }))
      expect(other.status).toBe(404)
    }).pipe(Effect.provide(loop())))

  it.effect("events lost by a stalled subscriber are counted by kind", () =>
    Effect.gen(function*() {
      const { port } = yield* Metrics.Endpoint
      const agent = yield* AgentLoop
      const stalled = yield* (yield* EventBus).subscribe({ capacity: 1 }) // never taken from: it fills and loses
      const fiber = yield* Effect.forkChild(agent.turn("s", "go"))
      yield* TestClock.adjust(1500)
      yield* Fiber.join(fiber)
      const { samples } = parsePrometheus((yield* scrape(port)).text)
      const lost = samples.filter((s) => s.name === "agent_loop_events_dropped_total")
      expect(lost.length).toBeGreaterThan(0)
      const counts = yield* stalled.dropped
      expect(Object.fromEntries(lost.map((s) => [s.labels.kind, s.value]))).toEqual(counts)
      expect(Object.keys(counts).length).toBeGreaterThan(0)
    }).pipe(Effect.scoped, Effect.provide(loop())))

  it.effect("the endpoint fails with a typed error when its port is taken", () =>
    Effect.gen(function*() {
      const { port } = yield* Metrics.Endpoint
      const error = yield* Layer.build(Metrics.layerPrometheus({ port })).pipe(Effect.scoped, Effect.flip)
      expect(error._tag).toBe("MetricsEndpointError")
      expect(error.message).toContain(`127.0.0.1:${port}`)
    }).pipe(Effect.provide(loop())))

  it.effect("a route's fiber belongs to the endpoint: one that dies answers 500, one still running when the endpoint closes is interrupted", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const interrupted = yield* Deferred.make<void>()
      const stuck = Deferred.succeed(started, undefined).pipe(Effect.andThen(Effect.never), Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined)))
      const scope = yield* Scope.make()
      const endpoint = yield* Layer.buildWithScope(Metrics.layerPrometheus({ port: 0, routes: { "/broken": Effect.die("boom"), "/stuck": stuck } }), scope)
      const { port } = Context.get(endpoint, Metrics.Endpoint)
      const broken = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/broken`, { signal: AbortSignal.timeout(10_000) }))
      expect(broken.status).toBe(500)
      const waiting = fetch(`http://127.0.0.1:${port}/stuck`, { signal: AbortSignal.timeout(10_000) }).catch(() => "closed")
      yield* Deferred.await(started)
      yield* Scope.close(scope, Exit.void)
      expect(yield* Deferred.isDone(interrupted)).toBe(true)
      expect(yield* Effect.promise(() => waiting)).toBe("closed")
    }).pipe(Effect.provide(EventBusLive.layerCapacity()), Effect.provide(Layer.succeed(Metric.MetricRegistry, new Map()))))

  it.effect("events still buffered when the observer's scope closes are recorded (an exporter flushing after it sees the last turn)", () =>
    Effect.gen(function*() {
      const bus = yield* EventBusLive.make()
      const scope = yield* Scope.make()
      yield* observe(bus).pipe(Scope.provide(scope))
      const place = { turnId: "t", sessionKey: "s", iteration: 2, depth: 0 }
      // published and closed with no yield between: the observer's fiber never ran
      bus.publishUnsafe(AgentEvent.make("TurnStart", place, 0, { input: "go" }))
      bus.publishUnsafe(AgentEvent.make("TurnEnd", place, 40, { status: "max_iterations", iterations: 2, durationMs: 40, usage: { inputTokens: 1, outputTokens: 1 } }))
      yield* Scope.close(scope, Exit.void)
      const { samples } = parsePrometheus(yield* PrometheusMetrics.format())
      expect(value(samples, "agent_loop_turns_total", { status: "max_iterations" })).toBe(1)
      expect(value(samples, "agent_loop_iterations_total")).toBe(2)
      expect(value(samples, "agent_loop_turns_in_flight")).toBe(0)
      // and the subscription is gone with the scope
      expect(yield* bus.subscribers).toBe(0)
    }).pipe(Effect.provide(Layer.succeed(Metric.MetricRegistry, new Map()))))

  const registry = new Map()
  it.effect("metrics without a description (the cluster's gauges) are served with a HELP line too", () =>
    Effect.gen(function*() {
      const { port } = yield* Metrics.Endpoint
      yield* Metric.update(Metric.gauge("effect_cluster_runners", { bigint: true }), 2n)
      yield* Metric.update(Metric.gauge("some_other_gauge"), 1)
      const { text } = yield* scrape(port)
      expect(helpless(text)).toEqual([])
      expect(text).toContain("# HELP effect_cluster_runners Runners registered in the cluster\n# TYPE effect_cluster_runners gauge")
      expect(text).toContain("# HELP some_other_gauge some other gauge\n")
      expect(value(parsePrometheus(text).samples, "effect_cluster_runners")).toBe(2)
    }).pipe(Effect.provide(loop(registry)), Effect.provideService(Metric.MetricRegistry, registry)))

  it("parsePrometheus rejects what is not the text format", () => {
    expect(() => parsePrometheus("x 1")).toThrow(/newline/)
    expect(() => parsePrometheus("x 1\n")).toThrow(/no declared family/)
    expect(() => parsePrometheus("# TYPE x counter\nx{a=b} 1\n")).toThrow(/bad labels/)
    expect(() => parsePrometheus("# TYPE x counter\nx one\n")).toThrow(/bad value/)
    expect(parsePrometheus("# TYPE x counter\nx{a=\"q\\\"\"} 2\n").samples).toEqual([{ name: "x", labels: { a: "q\"" }, value: 2 }])
  })
})
