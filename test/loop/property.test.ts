/**
 * A seeded random schedule of tool calls, steering, follow-ups, graceful and hard interrupts,
 * all on the TestClock, checked against the invariants of DESIGN §5–6.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Queue, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import { AgentLoop, type AgentEvent, type Message, type Scripted, SessionStore, Tool, type Turn } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"

/** mulberry32: a small seeded PRNG, so a failing run can be replayed from its seed. */
const prng = (seed: number) => () => {
  seed |= 0
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const RUNS = 300

const sleeper = (name: string, readOnly: boolean, random: () => number) =>
  Tool.make({
    name,
    description: name,
    parameters: Schema.Struct({}),
    readOnly,
    execute: () => Effect.suspend(() => Effect.as(Effect.sleep(Math.floor(random() * 60)), `${name} ok`))
  })

type Action = "steer" | "followUp" | "graceful" | "hard" | "send"

interface Sent {
  readonly content: string
  readonly via: Action
  accepted: boolean
  error?: string
}

const runOnce = (seed: number) => {
  const random = prng(seed)
  const pick = <A>(items: ReadonlyArray<A>) => items[Math.floor(random() * items.length)]!
  const script = (): Scripted.ScriptedResponse => {
    const delay = Math.floor(random() * 40)
    if (random() < 0.55) {
      const count = 1 + Math.floor(random() * 3)
      return { delay, toolCalls: Array.from({ length: count }, () => ({ name: pick(["ro", "rw"]) })) }
    }
    return { delay, content: random() < 0.5 ? "done" : ["do", "ne"], chunkDelay: Math.floor(random() * 10) }
  }
  return Effect.gen(function*() {
    const loop = yield* AgentLoop
    const events = (yield* Testing.recordEvents).all
    const replies = yield* Queue.unbounded<Turn.Outbound>()
    yield* Effect.forkScoped(Stream.runForEach(loop.outbound, (o) => Queue.offer(replies, o)))
    const sent: Array<Sent> = [{ content: "input-0", via: "send", accepted: true }]
    yield* loop.send({ sessionKey: "s", content: "input-0" })
    const actions = Array.from({ length: 1 + Math.floor(random() * 6) }, (_, i) => ({
      at: Math.floor(random() * 400),
      action: pick<Action>(["steer", "steer", "followUp", "graceful", "hard", "send"]),
      content: `msg-${i + 1}`
    }))
    const fibers = yield* Effect.forEach(actions, ({ action, at, content }) =>
      Effect.forkChild(Effect.gen(function*() {
        yield* Effect.sleep(at)
        const record: Sent = { content, via: action, accepted: false }
        const attempt = action === "steer"
          ? loop.injectSteering("s", content)
          : action === "followUp"
          ? loop.injectFollowUp("s", content)
          : action === "graceful"
          ? loop.interruptGraceful("s", content)
          : action === "hard"
          ? loop.interruptHard("s")
          : loop.send({ sessionKey: "s", content })
        const outcome = yield* Effect.result(attempt)
        if (outcome._tag === "Success") record.accepted = true
        else record.error = outcome.failure._tag
        if (action !== "graceful" && action !== "hard") sent.push(record)
      })))
    for (let t = 0; t < 3000; t += 5) {
      yield* TestClock.adjust("5 millis")
      yield* Effect.yieldNow
    }
    yield* Effect.forEach(fibers, Fiber.join)
    const all: ReadonlyArray<AgentEvent.AgentEvent> = yield* events
    const outs = yield* Queue.takeAll(replies)
    return { all, outs, sent, history: yield* (yield* SessionStore).load("s"), active: yield* loop.activeTurns }
  }).pipe(
    Effect.scoped,
    Effect.provide(Layer.fresh(Testing.layer({
      tools: [sleeper("ro", true, random), sleeper("rw", false, random)],
      config: { maxIterations: 5 },
      script: () => script()
    })))
  )
}

const checkInvariants = (seed: number, run: Effect.Success<ReturnType<typeof runOnce>>) => {
  const { active, all, history, outs, sent } = run
  const where = `seed ${seed}`
  // nothing hangs: every started turn ended and replied, nothing is active
  const starts = all.filter((e) => e._tag === "TurnStart" && e.depth === 0)
  expect(active, where).toEqual([])
  expect(outs.length, where).toBe(starts.length)
  // exactly one TurnEnd per turn
  for (const start of starts) {
    expect(all.filter((e) => e._tag === "TurnEnd" && e.turnId === start.turnId).length, `${where} ${start.turnId}`).toBe(1)
  }
  // aborted turns leave the history as it was: it is exactly what the other turns added, in order
  const kept = outs.filter((o) => o.status !== "aborted").flatMap((o) => o.result.messages)
  expect(history, where).toEqual(kept)
  for (const o of outs.filter((o) => o.status === "aborted")) expect(o.result.messages, where).toEqual([])
  // every tool call has exactly one result, and no result is without its call
  const calls = history.flatMap((m: Message.Message) => (m.role === "assistant" ? (m.toolCalls ?? []).map((c) => c.id) : []))
  const results = history.flatMap((m: Message.Message) => (m.role === "tool" ? [m.toolCallId] : []))
  expect([...results].sort(), where).toEqual([...calls].sort())
  expect(new Set(results).size, where).toBe(results.length)
  // no message is lost silently: it is in the history, a turn's input, a follow-up, or a typed error
  const inputs = new Set(starts.map((e) => (e._tag === "TurnStart" ? e.input : "")))
  const users = new Set(history.filter((m) => m.role === "user").map((m) => m.content))
  const followUps = new Set(outs.flatMap((o) => o.result.followUps))
  for (const message of sent) {
    const accounted = message.accepted
      ? users.has(message.content) || inputs.has(message.content) || followUps.has(message.content)
      : message.error === "NoActiveTurn" || message.error === "SteeringQueueFull"
    expect(accounted, `${where}: ${message.via} ${message.content} ${message.error ?? ""}`).toBe(true)
  }
}

describe("property: random steering, follow-ups and interrupts", () => {
  it.effect(`${RUNS} seeded schedules keep every invariant`, () =>
    Effect.gen(function*() {
      const statuses = new Map<string, number>()
      for (let seed = 1; seed <= RUNS; seed++) {
        const run = yield* runOnce(seed)
        checkInvariants(seed, run)
        for (const o of run.outs) statuses.set(o.status, (statuses.get(o.status) ?? 0) + 1)
      }
      // the schedules really exercise every ending
      for (const status of ["completed", "interrupted", "aborted", "max_iterations"]) {
        expect(statuses.get(status) ?? 0, `${status} in ${JSON.stringify([...statuses])}`).toBeGreaterThan(0)
      }
    }), 120_000)
})
