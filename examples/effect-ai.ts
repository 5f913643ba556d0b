/**
 * `effect/ai` both ways, offline:
 *
 * 1. an `effect/ai` `Toolkit`'s tool runs in a loop turn as it is (`AiToolkit.toTools`);
 * 2. the loop's tool runs through `LanguageModel.generateText({ toolkit })` (`AiToolkit.fromTools`);
 * 3. the loop runs on an `effect/ai` `LanguageModel`, named by its `Model` (no model in the config).
 *
 * The models are stand-ins: `Scripted` for the loop, and `LanguageModel.make` over canned parts
 * for `effect/ai` (a provider package's `model("…")` in an application).
 *
 *     npm run example examples/effect-ai.ts
 */
import { Effect, Layer, Schema, Stream } from "effect"
import { LanguageModel, Model, type Response, Tool as AiTool, Toolkit } from "effect/ai"
import {
  AgentLoop,
  AgentLoopLive,
  AiToolkit,
  LanguageModelProvider,
  Scripted,
  SessionStoreMemory,
  Tool,
  ToolRegistryLive
} from "effect-agent-loop"

// 1. An effect/ai toolkit, written as effect/ai users write one, used by the loop.
const GetWeather = AiTool.make("get_weather", {
  description: "The weather in a city",
  parameters: Schema.Struct({ city: Schema.String }),
  success: Schema.Struct({ sky: Schema.String, celsius: Schema.Number })
}).annotate(AiTool.Readonly, true)
const Weather = Toolkit.make(GetWeather)
const weatherHandlers = Weather.toLayer({ get_weather: ({ city }) => Effect.succeed({ sky: city === "Bergen" ? "rain" : "sun", celsius: 11 }) })

const toolkitInTheLoop = Effect.gen(function*() {
  const result = yield* (yield* AgentLoop).turn("s", "What is the weather in Bergen?")
  const toolResult = result.messages.find((m) => m.role === "tool")
  console.log(`[a toolkit in the loop] get_weather gave ${toolResult?.content}; answer: ${result.finalMessage?.content}`)
}).pipe(Effect.provide(
  AgentLoopLive.layer({ model: "scripted" }).pipe(Layer.provide([
    Scripted.layer([{ toolCalls: [{ name: "get_weather", arguments: { city: "Bergen" } }] }, { content: "Rain, 11 °C." }]),
    ToolRegistryLive.layer(AiToolkit.toTools(Weather)).pipe(Layer.provide(weatherHandlers)),
    SessionStoreMemory.layer()
  ]))
))

// 2. A loop tool, written with Tool.make, used by effect/ai's generateText.
const add = Tool.make({
  name: "add",
  description: "Adds two numbers",
  parameters: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
  readOnly: true,
  execute: ({ a, b }) => Effect.succeed(String(a + b))
})

const usage = { inputTokens: { total: 12 }, outputTokens: { total: 3 } }

/** A stand-in effect/ai model: it calls `add`, or streams a greeting. */
const cannedModel = Layer.effect(
  LanguageModel.LanguageModel,
  LanguageModel.make({
    generateText: () =>
      Effect.succeed<Array<Response.PartEncoded>>([
        { type: "tool-call", id: "call-1", name: "add", params: { a: 2, b: 40 } },
        { type: "finish", reason: "tool-calls", usage }
      ]),
    streamText: () =>
      Stream.fromIterable<Response.StreamPartEncoded>([
        { type: "text-delta", id: "t", delta: "Hello from an effect/ai model." },
        { type: "finish", reason: "stop", usage }
      ])
  })
)

const loopToolInGenerateText = Effect.gen(function*() {
  const { layer, toolkit } = AiToolkit.fromTools([add])
  const response = yield* LanguageModel.generateText({ prompt: "What is 2 + 40?", toolkit }).pipe(Effect.provide(layer))
  for (const part of response.toolResults) console.log(`[a loop tool in generateText] generateText ran ${part.name}: ${String(part.result)}`)
}).pipe(Effect.provide(cannedModel))

// 3. The loop on an effect/ai model; `Model.make` names it, so the config needs no model.
const loopOnLanguageModel = Effect.gen(function*() {
  const agent = yield* AgentLoop
  const events = yield* agent.subscribe({ capacity: 64, kinds: ["LLMRequest"] })
  const result = yield* agent.turn("s", "Hi")
  const [request] = yield* events.takeAll
  console.log(`[LanguageModel] model ${request?._tag === "LLMRequest" ? request.model : "?"} answered: ${result.finalMessage?.content}`)
}).pipe(
  Effect.scoped,
  Effect.provide(AgentLoopLive.layer({ systemPrompt: "Be brief." }).pipe(Layer.provide([
    LanguageModelProvider.layer.pipe(Layer.provide(Model.make("canned", "canned-1", cannedModel))),
    ToolRegistryLive.layer([]),
    SessionStoreMemory.layer()
  ])))
)

Effect.runPromise(Effect.all([toolkitInTheLoop, loopToolInGenerateText, loopOnLanguageModel], { discard: true }))
