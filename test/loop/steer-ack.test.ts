/**
 * Acknowledged steering (`AgentLoop.steer`): every message is admitted to the running turn (and
 * then seen by exactly the model call the acknowledgement names) or queued to run as a turn of its
 * own; none is lost or seen twice. 1,000 randomized runs, deterministic: a seeded random picks
 * the timings of a 3-tool batch and of the steering, and the TestClock runs them.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import { AgentLoop, Message, SessionStore, Tool, type Turn } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"

/** mulberry32: a small seeded random, so a failing run can be replayed by its seed. */
const seeded = (seed: number) => () => {
  seed = (seed + 0x6D2B79F5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const tool = (name: string, readOnly: boolean, ms: () => number) =>
  Tool.make({
    name,
    description: name,
    parameters: Schema.Struct({}),
    readOnly,
    execute: () => Effect.as(Effect.sleep(ms()), `${name} done`)
  })

interface Run {
  readonly acks: ReadonlyArray<readonly [string, Turn.SteerAck]>
  readonly replies: ReadonlyArray<Turn.TurnResult>
  readonly stored: ReadonlyArray<Message.Message>
}

/** One run: a routed turn whose first reply calls 3 tools (one read-only, two not: three groups), steered 1-3 times at random moments. */
const run = (seed: number): Effect.Effect<Run> => {
  const random = seeded(seed)
  const ms = () => Math.floor(random() * 20)
  const maxIterations = 2 + Math.floor(random() * 2)
  const steerings = 1 + Math.floor(random() * 3)
  const at = Array.from({ length: steerings }, () => Math.floor(random() * 140)).sort((a, b) => a - b)
  return Effect.gen(function*() {
    const loop = yield* AgentLoop
    const replies: Array<Turn.TurnResult> = []
    yield* Effect.forkScoped(Stream.runForEach(loop.outbound, (outbound) => Effect.sync(() => replies.push(outbound.result))))
    yield* loop.send({ sessionKey: "s", content: "start" })
    const acks: Array<readonly [string, Turn.SteerAck]> = []
    let now = 0
    for (const [i, when] of at.entries()) {
      yield* TestClock.adjust(when - now)
      now = when
      const message = `steer ${i}`
      acks.push([message, yield* loop.steer("s", message)])
    }
    yield* TestClock.adjust("10 minutes")
    return { acks, replies, stored: yield* (yield* SessionStore).load("s") }
  }).pipe(
    Effect.scoped,
    Effect.provide(Testing.layer({
      config: { maxIterations },
      tools: [tool("t1", true, ms), tool("t2", false, ms), tool("t3", false, ms)],
      script: (request) => {
        const last = request.messages.at(-1)
        const first = last?.role === "user" && last.content === "start"
        return first
          ? { toolCalls: [{ name: "t1" }, { name: "t2" }, { name: "t3" }], delay: `${ms()} millis` }
          : { content: "ok", delay: `${ms()} millis` }
      }
    })),
    Effect.orDie
  )
}

/** How many assistant replies come before `message` in `messages` (the model call that saw it is the next). */
const repliesBefore = (messages: ReadonlyArray<Message.Message>, message: string) => {
  const index = messages.findIndex((m) => m.role === "user" && m.content === message)
  return index < 0 ? -1 : messages.slice(0, index).filter((m) => m.role === "assistant").length
}

describe("steer: acknowledged steering", () => {
  it.effect("1,000 randomized runs: every message is seen once, where its acknowledgement says", () =>
    Effect.gen(function*() {
      const tally = { admitted: 0, follow_up: 0, next_turn: 0 }
      for (let seed = 1; seed <= 1000; seed++) {
        const { acks, replies, stored } = yield* run(seed)
        for (const [message, ack] of acks) {
          const where = `seed ${seed}, ${message}: ${JSON.stringify(ack)}`
          // never lost, never twice
          expect(stored.filter((m) => m.role === "user" && m.content === message), where).toHaveLength(1)
          if (ack._tag === "Admitted") {
            tally.admitted++
            const turn = replies.find((r) => r.turnId === ack.turnId)
            expect(turn, where).toBeDefined()
            expect(repliesBefore(turn!.messages, message), where).toBe(ack.iteration - 1)
          } else {
            tally[ack.reason]++
            if (ack.turnId !== undefined) {
              expect(replies.find((r) => r.turnId === ack.turnId)?.messages.some((m) => m.content === message), where).toBe(false)
            }
          }
        }
      }
      // the runs reach every outcome
      expect(tally.admitted).toBeGreaterThan(100)
      expect(tally.follow_up).toBeGreaterThan(10)
      expect(tally.next_turn).toBeGreaterThan(10)
    }), 300_000)

  it.effect("a message for a session with no turn starts one, through the router", () =>
    Effect.gen(function*() {
      const loop = yield* AgentLoop
      const ack = yield* loop.steer("idle", "hello")
      expect(ack).toEqual({ _tag: "Queued", reason: "next_turn" })
      const reply = yield* Stream.runHead(loop.outbound)
      expect(reply._tag === "Some" && reply.value.content).toBe("hi")
      expect(Message.textOf((yield* (yield* SessionStore).load("idle"))[0]!.content)).toBe("hello")
    }).pipe(Effect.provide(Testing.layer({ script: [{ content: "hi" }] }))))
})
