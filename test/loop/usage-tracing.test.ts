/**
 * Usage, cost and tracing of a turn: token counts per call (`LLMResponse`) and summed over the
 * turn (`TurnEnd`, `TurnResult`), cost from `config.prices`, and the span tree a turn leaves in a
 * tracer, named and annotated as OpenTelemetry's GenAI conventions say (`invoke_agent agent-loop` →
 * `chat {model}`, a CLIENT span / `execute_tool {tool}`), failures in error with `error.type`.
 */
import { describe, expect, it } from "@effect/vitest"
import { AgentLoop, Hook, ProviderRejected, Tool, ToolError, Usage } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { Cause, Effect, Exit, Fiber, Layer, Option, Schema, Tracer } from "effect"
import { captureWarnings, echo, ofKind } from "../support/fixtures.ts"

const fails = Tool.make({
  name: "fails",
  description: "always fails",
  parameters: Schema.Struct({}),
  execute: () => Effect.fail(new ToolError({ message: "no such order" }))
})

const blocksForever = Tool.make({
  name: "block",
  description: "never returns",
  parameters: Schema.Struct({}),
  execute: () => Effect.never
})

/** One tool call (1000 in, 200 out), then a final answer (3000 in, 50 out). */
const toolThenAnswer = [
  { toolCalls: [{ name: "echo", arguments: { text: "hi" } }], usage: { inputTokens: 1000, outputTokens: 200 } },
  { content: "done", usage: { inputTokens: 3000, outputTokens: 50 } }
]

describe("usage", () => {
  it.effect("per call in LLMResponse, summed in TurnEnd and TurnResult; no prices means no cost", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "go")
      const all = yield* events
      expect(ofKind(all, "LLMResponse").map((e) => e.usage)).toEqual([
        { inputTokens: 1000, outputTokens: 200 },
        { inputTokens: 3000, outputTokens: 50 }
      ])
      expect(result.usage).toEqual({ inputTokens: 4000, outputTokens: 250 })
      expect(ofKind(all, "TurnEnd").map((e) => e.usage)).toEqual([{ inputTokens: 4000, outputTokens: 250 }])
    }).pipe(Effect.provide(Testing.layer({ tools: [echo], script: toolThenAnswer }))))

  it.effect("a call without usage counts as zero tokens", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "go")
      expect(result.usage).toEqual({ inputTokens: 3000, outputTokens: 50 })
    }).pipe(Effect.provide(Testing.layer({
      tools: [echo],
      script: [{ toolCalls: [{ name: "echo", arguments: { text: "hi" } }] }, toolThenAnswer[1]!]
    }))))

  it.effect("with a price for the model: costUsd = tokens × price / 1e6, per call and summed", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "go")
      const all = yield* events
      // call 1: (1000 × 2.5 + 200 × 10) / 1e6 = 0.0045; call 2: (3000 × 2.5 + 50 × 10) / 1e6 = 0.008
      expect(ofKind(all, "LLMResponse").map((e) => e.usage)).toEqual([
        { inputTokens: 1000, outputTokens: 200, costUsd: 0.0045 },
        { inputTokens: 3000, outputTokens: 50, costUsd: 0.008 }
      ])
      expect(result.usage.inputTokens).toBe(4000)
      expect(result.usage.outputTokens).toBe(250)
      expect(result.usage.costUsd).toBeCloseTo(0.0125, 12)
      const end = ofKind(all, "TurnEnd")[0]!
      expect(end.usage).toEqual(result.usage)
    }).pipe(Effect.provide(Testing.layer({
      tools: [echo],
      script: toolThenAnswer,
      config: { prices: { "test-model": { inputPerMillion: 2.5, outputPerMillion: 10 }, other: { inputPerMillion: 1, outputPerMillion: 1 } } }
    }))))

  it.effect("cached and cache-write tokens cost their own prices where the price has them, input's otherwise", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "go")
      // (1000 × 3 + 6000 × 0.3 + 2000 × 3.75 + 50 × 15) / 1e6 = 0.01305
      expect(result.usage.costUsd).toBeCloseTo(0.01305, 12)
      // Without cache prices every input token costs the input price: (9000 × 3 + 50 × 15) / 1e6
      expect(Usage.cost(result.usage, { inputPerMillion: 3, outputPerMillion: 15 })).toBeCloseTo(0.02775, 12)
    }).pipe(Effect.provide(Testing.layer({
      script: [{ content: "done", usage: { inputTokens: 9000, outputTokens: 50, cachedInputTokens: 6000, cacheWriteTokens: 2000 } }],
      config: { prices: { "test-model": { inputPerMillion: 3, outputPerMillion: 15, cachedInputPerMillion: 0.3, cacheWritePerMillion: 3.75 } } }
    }))))

  it.effect("a per-turn model override is priced at its own price", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "go", { model: "big" })
      // (3000 × 15 + 50 × 75) / 1e6 = 0.04875
      expect(result.usage).toEqual({ inputTokens: 3000, outputTokens: 50, costUsd: 0.04875 })
    }).pipe(Effect.provide(Testing.layer({
      script: [toolThenAnswer[1]!],
      config: { prices: { "test-model": { inputPerMillion: 1, outputPerMillion: 1 }, big: { inputPerMillion: 15, outputPerMillion: 75 } } }
    }))))

  it.effect("a model switched by beforeLLMRequest is priced at the switched model's price", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      yield* loop.registerHook({ beforeLLMRequest: () => Hook.modify({ model: "small" }) })
      const result = yield* loop.turn("s", "go")
      // (3000 × 1 + 50 × 2) / 1e6 = 0.0031, not the configured model's price
      expect(result.usage).toEqual({ inputTokens: 3000, outputTokens: 50, costUsd: 0.0031 })
    }).pipe(Effect.scoped, Effect.provide(Testing.layer({
      script: [toolThenAnswer[1]!],
      config: { prices: { "test-model": { inputPerMillion: 100, outputPerMillion: 100 }, small: { inputPerMillion: 1, outputPerMillion: 2 } } }
    }))))

  const unpriced = captureWarnings()
  it.effect("an unknown model costs 0 with one logged warning, and the turn still completes", () =>
    Effect.gen(function*() {
      unpriced.warnings.length = 0
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "go")
      expect(result.status).toBe("completed")
      expect(result.usage).toEqual({ inputTokens: 4000, outputTokens: 250, costUsd: 0 })
      expect(ofKind(yield* events, "LLMResponse").map((e) => e.usage.costUsd)).toEqual([0, 0])
      expect(unpriced.warnings).toEqual(['No price for model "test-model"; its cost counts as 0'])
    }).pipe(Effect.provide(Layer.merge(
      Testing.layer({ tools: [echo], script: toolThenAnswer, config: { prices: { other: { inputPerMillion: 1, outputPerMillion: 1 } } } }),
      unpriced.layer
    ))))
})

interface RecordedSpan {
  readonly span: Tracer.Span
  readonly name: string
  readonly id: string
  readonly parentId: string | undefined
}

/** A tracer keeping every span it starts, in start order. */
const recordingTracer = () => {
  const spans: Array<RecordedSpan> = []
  const tracer = Tracer.make({
    span(options) {
      const span = new Tracer.NativeSpan(options)
      spans.push({ span, name: span.name, id: span.spanId, parentId: Option.getOrUndefined(options.parent)?.spanId })
      return span
    }
  })
  return { spans, tracer }
}

const named = (spans: ReadonlyArray<RecordedSpan>, name: string) => spans.filter((s) => s.name === name)

/** The names from a span up to the root. */
const ancestry = (spans: ReadonlyArray<RecordedSpan>, span: RecordedSpan): Array<string> => {
  const names: Array<string> = []
  let current: RecordedSpan | undefined = span
  while (current) {
    names.push(current.name)
    const parentId: string | undefined = current.parentId
    current = parentId === undefined ? undefined : spans.find((s) => s.id === parentId)
  }
  return names
}

const endedOk = (span: RecordedSpan) => span.span.status._tag === "Ended" && span.span.status.exit._tag === "Success"

/** The message a span that ended in error carries (what an exporter puts in its status). */
const failedWith = (span: RecordedSpan) =>
  span.span.status._tag === "Ended" && span.span.status.exit._tag === "Failure" ? Cause.pretty(span.span.status.exit.cause) : ""

/** The turn's span. */
const TURN = "invoke_agent agent-loop"

describe("tracing", () => {
  const recorded = recordingTracer()
  it.effect("a turn with one tool call and a final answer: invoke_agent over two chat spans and one execute_tool", () =>
    Effect.gen(function*() {
      recorded.spans.length = 0
      const result = yield* (yield* AgentLoop).turn("s", "go")
      expect(result.status).toBe("completed")
      const spans = recorded.spans
      const [turn, ...otherTurns] = named(spans, TURN)
      expect(otherTurns).toEqual([])
      expect(turn!.parentId).toBeUndefined()
      expect(endedOk(turn!)).toBe(true)
      expect(turn!.span.attributes.get("gen_ai.request.model")).toBe("test-model")
      expect(turn!.span.attributes.get("gen_ai.operation.name")).toBe("invoke_agent")
      expect(turn!.span.attributes.get("gen_ai.agent.name")).toBe("agent-loop")
      expect(turn!.span.attributes.get("gen_ai.conversation.id")).toBe("s")
      expect(turn!.span.attributes.get("agent.session.key")).toBe("s")
      expect(turn!.span.attributes.get("agent.turn.id")).toBe(result.turnId)
      expect(turn!.span.attributes.get("agent.turn.status")).toBe("completed")
      expect(turn!.span.attributes.get("agent.turn.iterations")).toBe(2)

      const chats = named(spans, "chat test-model")
      expect(chats).toHaveLength(2)
      expect(chats.map((c) => c.parentId)).toEqual([turn!.id, turn!.id])
      expect(chats.map((c) => [
        c.span.attributes.get("gen_ai.request.model"),
        c.span.attributes.get("gen_ai.usage.input_tokens"),
        c.span.attributes.get("gen_ai.usage.output_tokens"),
        c.span.attributes.get("gen_ai.response.finish_reasons")
      ])).toEqual([
        ["test-model", 1000, 200, ["tool_calls"]],
        ["test-model", 3000, 50, ["stop"]]
      ])
      expect(chats.every(endedOk)).toBe(true)
      expect(chats.map((c) => [c.span.kind, c.span.attributes.get("gen_ai.operation.name"), c.span.attributes.get("gen_ai.conversation.id")]))
        .toEqual([["client", "chat", "s"], ["client", "chat", "s"]])

      const tools = named(spans, "execute_tool echo")
      expect(tools).toHaveLength(1)
      expect(tools[0]!.parentId).toBe(turn!.id)
      expect(tools[0]!.span.attributes.get("gen_ai.tool.name")).toBe("echo")
      expect(tools[0]!.span.attributes.get("gen_ai.tool.call.id")).toBe("call_0_0")
      expect(tools[0]!.span.attributes.get("agent.tool.is_error")).toBe(false)
      expect(endedOk(tools[0]!)).toBe(true)

      // every span of the turn hangs under the turn's, and all of them ended
      for (const span of spans) {
        expect(ancestry(spans, span).at(-1)).toBe(TURN)
        expect(span.span.status._tag).toBe("Ended")
      }
      expect(new Set(spans.map((s) => s.span.traceId)).size).toBe(1)
    }).pipe(Effect.provide(Layer.merge(
      Testing.layer({ tools: [echo], script: toolThenAnswer }),
      Layer.succeed(Tracer.Tracer, recorded.tracer)
    ))))

  const nested = recordingTracer()
  it.effect("a caller's span is the parent of the turn's", () =>
    Effect.gen(function*() {
      nested.spans.length = 0
      const loop = yield* AgentLoop
      yield* loop.turn("s", "go").pipe(Effect.withSpan("caller"))
      const [caller] = named(nested.spans, "caller")
      const [turn] = named(nested.spans, TURN)
      expect(turn!.parentId).toBe(caller!.id)
      for (const span of nested.spans) expect(ancestry(nested.spans, span).at(-1)).toBe("caller")
    }).pipe(Effect.provide(Layer.merge(
      Testing.layer({ tools: [echo], script: toolThenAnswer }),
      Layer.succeed(Tracer.Tracer, nested.tracer)
    ))))

  const failing = recordingTracer()
  it.effect("a failed turn ends its span in error, with error.type, as does its failed model call", () =>
    Effect.gen(function*() {
      failing.spans.length = 0
      const result = yield* (yield* AgentLoop).turn("s", "go")
      expect(result.status).toBe("failed")
      const [turn] = named(failing.spans, TURN)
      expect(turn!.span.attributes.get("agent.turn.status")).toBe("failed")
      expect(turn!.span.attributes.get("error.type")).toBe("ProviderRejected")
      expect(turn!.span.status._tag === "Ended" && turn!.span.status.exit._tag).toBe("Failure")
      expect(failedWith(turn!)).toContain("bad request")
      const [chat] = named(failing.spans, "chat test-model")
      expect(chat!.parentId).toBe(turn!.id)
      expect(chat!.span.status._tag === "Ended" && chat!.span.status.exit._tag).toBe("Failure")
    }).pipe(Effect.provide(Layer.merge(
      Testing.layer({ script: [{ content: "half", errorAfterChunks: new ProviderRejected({ message: "bad request", status: 400 }) }] }),
      Layer.succeed(Tracer.Tracer, failing.tracer)
    ))))

  const aborted = recordingTracer()
  it.effect("a hard-aborted turn: its span says aborted, in error, and the interrupted tool span ends with an interruption", () =>
    Effect.gen(function*() {
      aborted.spans.length = 0
      const loop = yield* AgentLoop
      const events = (yield* Testing.recordEvents).all
      const turn = yield* Effect.forkChild(loop.turn("s", "go"))
      yield* Testing.settled(Effect.map(events, (all) => all.some((e) => e._tag === "ToolExecStart")))
      yield* loop.interruptHard("s")
      const result = yield* Fiber.join(turn)
      expect(result.status).toBe("aborted")
      expect(result.usage).toEqual({ inputTokens: 1000, outputTokens: 200 })
      const [span] = named(aborted.spans, TURN)
      expect(span!.span.attributes.get("agent.turn.status")).toBe("aborted")
      expect(span!.span.attributes.get("error.type")).toBe("aborted")
      expect(endedOk(span!)).toBe(false)
      const [tool] = named(aborted.spans, "execute_tool block")
      expect(tool!.parentId).toBe(span!.id)
      expect(tool!.span.status._tag === "Ended" && Exit.hasInterrupts(tool!.span.status.exit)).toBe(true)
    }).pipe(Effect.provide(Layer.merge(
      Testing.layer({ tools: [blocksForever], script: [{ toolCalls: [{ name: "block" }], usage: { inputTokens: 1000, outputTokens: 200 } }] }),
      Layer.succeed(Tracer.Tracer, aborted.tracer)
    ))))

  const failedTool = recordingTracer()
  it.effect("a tool call with an error result ends its span in error, with error.type ToolError", () =>
    Effect.gen(function*() {
      failedTool.spans.length = 0
      const result = yield* (yield* AgentLoop).turn("s", "go")
      expect(result.status).toBe("completed")
      const [tool] = named(failedTool.spans, "execute_tool fails")
      expect(tool!.span.attributes.get("agent.tool.is_error")).toBe(true)
      expect(tool!.span.attributes.get("error.type")).toBe("ToolError")
      expect(failedWith(tool!)).toContain("no such order")
      // the turn itself completed: its span is not in error
      expect(endedOk(named(failedTool.spans, TURN)[0]!)).toBe(true)
    }).pipe(Effect.provide(Layer.merge(
      Testing.layer({ tools: [fails], script: [{ toolCalls: [{ name: "fails" }] }, { content: "sorry" }] }),
      Layer.succeed(Tracer.Tracer, failedTool.tracer)
    ))))
})
