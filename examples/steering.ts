/**
 * Steering and interrupts, from outside a running turn: a message that redirects it (the calls
 * it had not started are skipped), a graceful interrupt (one last call, without tools, to wrap
 * up), and a hard one (cancelled now, the session rolled back). Offline, on a scripted model:
 *
 *     npm run example examples/steering.ts
 */
import { Effect, Fiber, Layer, Schema } from "effect"
import {
  type AgentEvent,
  AgentLoop,
  AgentLoopLive,
  Scripted,
  SessionStore,
  SessionStoreMemory,
  type Subscription,
  Tool,
  ToolRegistryLive
} from "effect-agent-loop"

/** A mutating tool that takes a moment: each call is a step of its own, so steering can land between them. */
const book = Tool.make({
  name: "book_hotel",
  description: "Books a hotel in a city",
  parameters: Schema.Struct({ city: Schema.String }),
  execute: ({ city }) => Effect.sleep("100 millis").pipe(Effect.as(`booked a hotel in ${city}`))
})

const call = (city: string) => ({ name: "book_hotel", arguments: { city } })

// One scripted model serves the three turns below, in order.
const model = Scripted.layer([
  // 1. steering
  { toolCalls: [call("Porto"), call("Faro")] },
  { toolCalls: [call("Lisbon")] },
  { content: "Booked Porto and Lisbon; Faro was dropped as you asked." },
  // 2. a graceful interrupt
  { toolCalls: [call("Madrid"), call("Seville"), call("Granada")] },
  { content: "Booked Madrid; Seville and Granada were not booked." },
  // 3. a hard interrupt: the model never answers
  { stall: true }
])

const loop = AgentLoopLive.layer({ model: "scripted" }).pipe(
  Layer.provide([model, ToolRegistryLive.layer([book])]),
  // provideMerge: the program reads the store too, to see what a turn left in it
  Layer.provideMerge(SessionStoreMemory.layer())
)

/** Waits for the next event of `kind` in a session (the subscription was made before the turn started). */
const next = (events: Subscription, sessionKey: string, kind: AgentEvent.EventKind) =>
  Effect.gen(function*() {
    while (true) {
      const event = yield* events.take
      if (event._tag === kind && event.sessionKey === sessionKey) return event
    }
  })

const program = Effect.gen(function*() {
  const agent = yield* AgentLoop
  const events = yield* agent.subscribe({ capacity: 1024 })

  // 1. Steering: while Porto is being booked, the user changes their mind.
  const trip = yield* Effect.forkChild(agent.turn("trip", "Book hotels in Porto and Faro."))
  yield* next(events, "trip", "ToolExecStart")
  yield* agent.injectSteering("trip", "Not Faro: Lisbon instead.")
  const steered = yield* Fiber.join(trip)
  const skipped = steered.messages.filter((m) => m.role === "tool" && m.isError).map((m) => m.content)
  console.log(`[steering] ${steered.status}: ${steered.finalMessage?.content}`)
  console.log(`[steering] skipped: ${skipped.join("; ")}`)

  // 2. A graceful interrupt: the booking in progress finishes, the rest are skipped, the model wraps up.
  const tour = yield* Effect.forkChild(agent.turn("tour", "Book Madrid, Seville and Granada."))
  yield* next(events, "tour", "ToolExecStart")
  yield* agent.interruptGraceful("tour", "The user must leave: say what was booked.")
  const wrapped = yield* Fiber.join(tour)
  console.log(`[graceful] ${wrapped.status}: ${wrapped.finalMessage?.content}`)

  // 3. A hard interrupt: the model's call is cancelled at once and the turn leaves nothing behind.
  const essay = yield* Effect.forkChild(agent.turn("essay", "Write a long essay."))
  yield* next(events, "essay", "LLMRequest")
  yield* agent.interruptHard("essay")
  const aborted = yield* Fiber.join(essay)
  const kept = yield* (yield* SessionStore).load("essay")
  console.log(`[hard] ${aborted.status}; messages kept in the session: ${kept.length}`)
})

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(loop)))
