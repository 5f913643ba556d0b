/**
 * A typed final answer: `turn(…, { output: Schema })` returns the answer decoded and typed. An
 * answer that does not decode goes back to the model with the Schema's error, and the model
 * tries again. Offline, on a scripted model:
 *
 *     npm run example examples/typed-answer.ts
 */
import { Effect, Layer, Schema } from "effect"
import { AgentLoop, AgentLoopLive, Scripted, SessionStoreMemory, ToolRegistryLive } from "effect-agent-loop"

const City = Schema.Struct({
  name: Schema.String,
  country: Schema.String,
  population: Schema.Int.annotate({ description: "inhabitants of the city proper" })
})

const model = Scripted.layer([
  // the first answer is not an integer: it goes back to the model with the error
  { output: { name: "Tokyo", country: "Japan", population: "about 14 million" } },
  { output: { name: "Tokyo", country: "Japan", population: 14_094_034 } }
])

const loop = AgentLoopLive.layer({ model: "scripted" }).pipe(
  Layer.provide([model, ToolRegistryLive.layer([]), SessionStoreMemory.layer()])
)

const program = Effect.gen(function*() {
  const agent = yield* AgentLoop
  const result = yield* agent.turn("geo", "Which is Japan's largest city?", { output: City })
  const sentBack = result.messages.filter((m) => m.role === "tool" && m.isError).map((m) => m.content)
  console.log(`[sent back] ${sentBack.join(" | ").replace(/\s*\n\s*/g, " ")}`)
  if (result.output !== undefined) {
    // `result.output` is typed by the Schema: `population` is a number
    const { country, name, population } = result.output
    console.log(`[answer] (${result.status}, ${result.iterations} iterations) ${name}, ${country}: ${population.toLocaleString("en")} people`)
  }
})

Effect.runPromise(program.pipe(Effect.provide(loop)))
