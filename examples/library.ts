/**
 * The loop as a library: a custom tool, a hook, and a scripted model, composed with layers.
 * Runs offline and deterministically:
 *
 *     npm run example examples/library.ts
 *
 * Swap `Scripted.layer(...)` for `OpenAiCompatible.layer()` (plus `NodeHttpClient.layerUndici`)
 * to talk to a real model; nothing else changes.
 */
import { Effect, Fiber, Layer, Schema } from "effect"
import { AgentLoop, AgentLoopLive, Hook, Scripted, SessionStoreMemory, Tool, ToolRegistryLive } from "effect-agent-loop"

/** A tool: its parameters are a Schema, so bad arguments become an error result the model sees. */
const convert = Tool.make({
  name: "celsius_to_fahrenheit",
  description: "Converts a temperature from °C to °F",
  parameters: Schema.Struct({ celsius: Schema.Number }),
  readOnly: true,
  execute: ({ celsius }) => Effect.succeed(`${celsius} °C = ${(celsius * 9) / 5 + 32} °F`)
})

/** A hook: it sees every tool call before it runs, and may change, deny or abort it. */
const audit = Hook.make({
  beforeTool: ({ call }) =>
    Effect.sync(() => {
      console.log(`[hook] ${call.name} is about to run with ${JSON.stringify(call.arguments)}`)
      return Hook.continue
    })
})

/** The model's side of the conversation, scripted: call the tool, then answer. */
const model = Scripted.layer([
  { content: "Let me convert that.", toolCalls: [{ name: "celsius_to_fahrenheit", arguments: { celsius: -1.5 } }] },
  { content: ["-1.5 °C is ", "29.3 °F: ", "just below freezing."], usage: { inputTokens: 120, outputTokens: 14 } }
])

const app = AgentLoopLive.layer({ model: "scripted", systemPrompt: "You are a weather assistant." }).pipe(
  Layer.provide([model, ToolRegistryLive.layer([convert]), SessionStoreMemory.layer()])
)

const program = Effect.gen(function*() {
  const loop = yield* AgentLoop
  yield* loop.registerHook(audit, { name: "audit" })
  // Subscribe before the turn starts; each subscriber has its own bounded buffer.
  const subscription = yield* loop.subscribe({ capacity: 1024 })
  const printer = yield* Effect.forkScoped(Effect.gen(function*() {
    while (true) {
      const event = yield* subscription.take
      const detail = event._tag === "LLMDelta" ? JSON.stringify(event.text) : event._tag === "ToolExecEnd" ? event.result : ""
      console.log(`[event] #${event.iteration} ${event._tag} ${detail}`)
      if (event._tag === "TurnEnd") return
    }
  }))
  const result = yield* loop.turn("garden-shed", "The shed reads -1.5 °C. What is that in Fahrenheit?")
  yield* Fiber.join(printer)
  console.log(`\n[answer] (${result.status}, ${result.iterations} iterations) ${result.finalMessage?.content}`)
})

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(app)))
