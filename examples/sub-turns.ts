/**
 * Sub-turns: a tool that runs child turns of the turn that called it (`CurrentTurn.spawnSubTurn`),
 * two reviewers at once, each with its own system prompt and model and no tools, and gives their
 * answers back as its result. Offline, on a scripted model that answers each turn by what it was
 * asked:
 *
 *     npm run example examples/sub-turns.ts
 */
import { Effect, Layer, Schema } from "effect"
import {
  AgentLoop,
  AgentLoopLive,
  CurrentTurn,
  Message,
  Scripted,
  SessionStoreMemory,
  Tool,
  ToolError,
  ToolRegistryLive
} from "effect-agent-loop"

const reviewers = {
  security: "You review code for security bugs only.",
  style: "You review code for naming and readability only."
} as const

/** Asks both reviewers at once, each in a sub-turn of the calling turn. */
const review = Tool.make({
  name: "review",
  description: "Has the change reviewed by a security and a style reviewer",
  parameters: Schema.Struct({ diff: Schema.String }),
  readOnly: true,
  execute: ({ diff }) =>
    Effect.gen(function*() {
      const turn = yield* CurrentTurn
      const answers = yield* Effect.forEach(Object.entries(reviewers), ([name, systemPrompt]) =>
        turn.spawnSubTurn({ model: "small-model", systemPrompt, task: `Review this change:\n${diff}`, tools: [] }).pipe(
          Effect.map((result) => `${name}: ${result.finalMessage?.content ?? result.status}`)
        ), { concurrency: 2 })
      return answers.join("\n")
    }).pipe(Effect.mapError((error) => new ToolError({ message: `review not started: ${error.message}` })))
})

/** The model: each request answered by who asks (the reviewers' system prompts) and what. */
const model = Scripted.layer((request) => {
  const system = request.messages.find((m) => m.role === "system")
  if (system?.content === reviewers.security) return { content: "The query is built by string concatenation: use a parameter.", delay: "50 millis" }
  if (system?.content === reviewers.style) return { content: "`q` could be named `query`.", delay: "30 millis" }
  const last = request.messages.at(-1)
  if (last?.role === "tool") return { content: `Two findings.\n${Message.textOf(last.content)}` }
  return { toolCalls: [{ name: "review", arguments: { diff: "+ db.run(\"SELECT * FROM t WHERE id = \" + q)" } }] }
})

const loop = AgentLoopLive.layer({ model: "big-model" }).pipe(
  Layer.provide([model, ToolRegistryLive.layer([review]), SessionStoreMemory.layer()])
)

const program = Effect.gen(function*() {
  const agent = yield* AgentLoop
  const events = yield* agent.subscribe({ capacity: 1024 })
  const result = yield* agent.turn("pr-42", "Review my change.")
  for (const event of yield* events.takeAll) {
    if (event._tag === "SubTurnSpawn") console.log(`[spawn] sub-turn on ${event.model} from depth ${event.depth}`)
    if (event._tag === "SubTurnEnd") console.log(`[end] a sub-turn ended ${event.status}`)
  }
  console.log(`[answer] (${result.status}) ${result.finalMessage?.content}`)
})

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(loop)))
