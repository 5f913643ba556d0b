/**
 * `effect/ai` both ways, with its real types: a `Toolkit`'s tools run in a loop turn
 * (`AiToolkit.toTools`), the loop's tools run through a `Toolkit` handler and
 * `LanguageModel.generateText` (`AiToolkit.fromTools`), and `fromLanguageModel` takes its model's
 * name from an `effect/ai` `Model`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Schema, Stream } from "effect"
import { LanguageModel, Model, type Response, Tool as AiTool, Toolkit } from "effect/ai"
import {
  AgentLoop,
  AgentLoopLive,
  AiToolkit,
  LanguageModelProvider,
  type Message,
  SessionStoreMemory,
  Tool,
  ToolError,
  ToolRegistryLive
} from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"

// --- an effect/ai toolkit, as its users write one

const GetWeather = AiTool.make("get_weather", {
  description: "The weather in a city",
  parameters: Schema.Struct({ city: Schema.String, days: Schema.NumberFromString }),
  success: Schema.Struct({ city: Schema.String, sky: Schema.String, days: Schema.Number })
}).annotate(AiTool.Readonly, true)

const Launch = AiTool.make("launch", {
  description: "Launches a rocket",
  parameters: Schema.Struct({ rocket: Schema.String }),
  success: Schema.String,
  failure: Schema.Struct({ reason: Schema.String }),
  needsApproval: true
})

const Fails = AiTool.make("fails", { success: Schema.String, failure: Schema.String })

const Snapshot = AiTool.make("snapshot", {
  success: Schema.String,
  toModelOutput: (caption) => [{ type: "text", text: caption }, { type: "file", mediaType: "image/png", data: "iVBORw0KGgo=" }] as any
})

const Weather = Toolkit.make(GetWeather, Launch, Fails, Snapshot)

class Forecasts extends Context.Service<Forecasts, { readonly sky: (city: string) => string }>()("test/Forecasts") {}

const handlers = Weather.toLayer(Effect.gen(function*() {
  const forecasts = yield* Forecasts
  return {
    get_weather: ({ city, days }) => Effect.succeed({ city, sky: forecasts.sky(city), days }),
    launch: ({ rocket }) => Effect.succeed(`${rocket} launched`),
    fails: () => Effect.fail("the barometer is broken"),
    snapshot: () => Effect.succeed("the sky now")
  }
})).pipe(Layer.provide(Layer.succeed(Forecasts, { sky: (city) => city === "Oslo" ? "rain" : "sun" })))

const resultOf = (messages: ReadonlyArray<Message.Message>, id: string) =>
  messages.find((m): m is Message.ToolResultMessage => m.role === "tool" && m.toolCallId === id)

describe("AiToolkit.toTools: a Toolkit's tools in the loop", () => {
  it.effect("run in a turn through the toolkit's handlers, decoded and encoded by its Schemas", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "Weather in Oslo?")
      expect(result.status).toBe("completed")
      expect(resultOf(result.messages, "w")?.content).toBe(JSON.stringify({ city: "Oslo", sky: "rain", days: 2 }))
      expect(resultOf(result.messages, "w")?.isError).toBeUndefined()
      // a failing handler is an error result the model sees
      expect(resultOf(result.messages, "f")).toMatchObject({ content: "the barometer is broken", isError: true })
      // toModelOutput's parts reach the model, the image as an image
      expect(resultOf(result.messages, "p")?.content).toEqual([
        { type: "text", text: "the sky now" },
        { type: "image", mediaType: "image/png", data: "iVBORw0KGgo=" }
      ])
      // bad arguments are the model's to fix, as for any tool
      expect(resultOf(result.messages, "bad")?.content).toMatch(/^Invalid arguments for tool "get_weather": city: Missing key/)
      // the model saw each tool's description and JSON Schema
      const [request] = yield* Testing.requests
      const weather = request!.tools.find((tool) => tool.name === "get_weather")
      expect(weather?.description).toBe("The weather in a city")
      expect(weather?.parameters).toMatchObject({ type: "object", required: ["city", "days"] })
    }).pipe(
      Effect.provide(Testing.layer({
        tools: AiToolkit.toTools(Weather),
        script: [
          {
            toolCalls: [
              { id: "w", name: "get_weather", arguments: { city: "Oslo", days: "2" } },
              { id: "f", name: "fails", arguments: {} },
              { id: "p", name: "snapshot", arguments: {} },
              { id: "bad", name: "get_weather", arguments: { days: "1" } }
            ]
          },
          { content: "Rain in Oslo." }
        ]
      }).pipe(Layer.provide(handlers)))
    ))

  it("keep the tools' annotations and approval", () => {
    const [weather, launch] = AiToolkit.toTools(Weather)
    expect([weather!.name, weather!.readOnly, weather!.requiresApproval]).toEqual(["get_weather", true, false])
    expect([launch!.name, launch!.readOnly, launch!.requiresApproval]).toEqual(["launch", false, true])
  })

  it.effect("a call that needs approval is denied without an approver, as the loop's own tools are", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "Launch")
      expect(resultOf(result.messages, "l")?.content).toMatch(/^Tool execution denied by approval/)
    }).pipe(
      Effect.provide(Testing.layer({
        tools: AiToolkit.toTools(Weather),
        script: [{ toolCalls: [{ id: "l", name: "launch", arguments: { rocket: "R1" } }] }, { content: "Not launched." }]
      }).pipe(Layer.provide(handlers)))
    ))
})

// --- the loop's tools, as its users write them

class Orders extends Context.Service<Orders, { readonly status: (id: string) => string }>()("test/Orders") {}

const lookupOrder = Tool.make({
  name: "lookup_order",
  description: "The status of an order",
  parameters: Schema.Struct({ id: Schema.String }),
  readOnly: true,
  execute: ({ id }) => Effect.gen(function*() { return (yield* Orders).status(id) })
})
const refund = Tool.make({
  name: "refund",
  description: "Refunds an order",
  parameters: Schema.Struct({ id: Schema.String }),
  requiresApproval: true,
  execute: ({ id }) => Effect.succeed(`refunded ${id}`)
})
const broken = Tool.make({
  name: "broken",
  description: "Always fails",
  parameters: Schema.Struct({}),
  execute: () => Effect.fail(new ToolError({ message: "out of order" }))
})

const orders = Layer.succeed(Orders, { status: (id) => `order ${id}: shipped` })

const usage = { inputTokens: { total: 1 }, outputTokens: { total: 1 } }

/** An effect/ai model that calls the tools it is told to, then answers. */
const callingModel = (calls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly params: unknown }>) =>
  Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({
      generateText: () =>
        Effect.succeed<Array<Response.PartEncoded>>([
          ...calls.map((call) => ({ type: "tool-call" as const, ...call })),
          { type: "finish", reason: "tool-calls", usage }
        ]),
      streamText: () => Stream.die("not used")
    })
  )

describe("AiToolkit.fromTools: the loop's tools as a Toolkit", () => {
  it.effect("a handler runs the loop tool, with the services it needs", () =>
    Effect.gen(function*() {
      const { layer, toolkit } = AiToolkit.fromTools([lookupOrder, broken])
      const ready = yield* Effect.provide(toolkit, layer)
      const run = (name: string, params: unknown) =>
        Effect.flatMap(ready.handle(name, params as never), (results) => Stream.runCollect(results))
      const [found] = yield* run("lookup_order", { id: "42" })
      expect([found!.result, found!.isFailure]).toEqual(["order 42: shipped", false])
      const [failed] = yield* run("broken", {})
      expect([failed!.result, failed!.isFailure]).toEqual(["out of order", true])
      const [invalid] = yield* run("lookup_order", { id: 42 })
      expect(invalid!.isFailure).toBe(true)
      expect(invalid!.result).toMatch(/^Invalid arguments for tool "lookup_order"/)
      expect(Object.keys(ready.tools)).toEqual(["lookup_order", "broken"])
      expect(AiTool.getJsonSchema(ready.tools["lookup_order"]!)).toEqual(lookupOrder.definition.parameters)
      expect(Context.get(ready.tools["lookup_order"]!.annotations, AiTool.Readonly)).toBe(true)
    }).pipe(Effect.provide(orders)))

  it.effect("LanguageModel.generateText runs them; one that needs approval is asked for, not run", () =>
    Effect.gen(function*() {
      const { layer, toolkit } = AiToolkit.fromTools([lookupOrder, refund])
      const response = yield* LanguageModel.generateText({ prompt: "Where is order 7? Refund 8.", toolkit }).pipe(
        Effect.provide(layer)
      )
      expect(response.toolResults.map((part) => [part.name, part.result])).toEqual([["lookup_order", "order 7: shipped"]])
      expect(response.content.filter((part) => part.type === "tool-approval-request")).toHaveLength(1)
    }).pipe(
      Effect.provide(callingModel([{ id: "c1", name: "lookup_order", params: { id: "7" } }, { id: "c2", name: "refund", params: { id: "8" } }])),
      Effect.provide(orders)
    ))
})

describe("LanguageModelProvider: the model's name", () => {
  /** An effect/ai model that answers with text. */
  const answering = Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({
      generateText: () => Effect.die("not used"),
      streamText: () =>
        Stream.fromIterable<Response.StreamPartEncoded>([
          { type: "text-delta", id: "t", delta: "hello" },
          { type: "finish", reason: "stop", usage }
        ])
    })
  )
  const loopOver = (model: Layer.Layer<LanguageModel.LanguageModel>) =>
    AgentLoopLive.layer({ systemPrompt: "Be brief." }).pipe(
      Layer.provide([LanguageModelProvider.layer.pipe(Layer.provide(model)), ToolRegistryLive.layer([]), SessionStoreMemory.layer()])
    )

  it.effect("comes from an effect/ai Model: the config needs none", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "hi")
      expect(result.finalMessage?.content).toBe("hello")
      expect((yield* events).filter((e) => e._tag === "LLMRequest").map((e) => e.model)).toEqual(["acme-large"])
    }).pipe(Effect.scoped, Effect.provide(loopOver(Model.make("acme", "acme-large", answering)))))

  it.effect("without a Model's name or a config's, the layer says the model is missing", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Effect.provide(Effect.service(AgentLoop), loopOver(answering)))
      expect(Exit.isFailure(exit) && JSON.stringify(exit.cause)).toContain("the provider names no model of its own")
    }))
})
