/**
 * The event journal: every event of a session numbered in publish order, kept in the store beside
 * the log, and served "after N" with nothing missed and nothing twice, whether the events are
 * still in memory, already stored or both, and whether the reader reconnects at any point.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import { AgentEvent, EventBusLive, EventJournalLive, Message, SessionStoreMemory } from "effect-agent-loop"

const place = (sessionKey: string) => ({ turnId: "t1", sessionKey, iteration: 1, depth: 0 })

/** Event `i` of a session: a text delta, every `boundary`-th a model reply (a step's end, which writes the journal). */
const eventAt = (sessionKey: string, i: number, boundary: number): AgentEvent.AgentEvent =>
  i % boundary === boundary - 1
    ? AgentEvent.make("LLMResponse", place(sessionKey), i, { model: "m", content: `r${i}`, toolCalls: [], finishReason: "stop", usage: { inputTokens: 1, outputTokens: 1 }, durationMs: 1 })
    : AgentEvent.make("LLMDelta", place(sessionKey), i, { kind: "text", text: `d${i}` })

const seqs = (events: ReadonlyArray<{ readonly seq: number }>) => events.map((e) => e.seq)
const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i)

/** A journal over a memory store, and a bus (buffers of 1, no subscriber) that feeds it. */
const setup = Effect.gen(function*() {
  const store = yield* SessionStoreMemory.make()
  const recording = yield* EventJournalLive.make(store)
  const bus = yield* EventBusLive.make(1, recording.observe)
  return { store, journal: recording.journal, bus }
})

describe("EventJournal", () => {
  it.effect("numbers every event of a session in publish order; read after any N gives exactly the rest", () =>
    Effect.scoped(Effect.gen(function*() {
      const { store, journal, bus } = yield* setup
      // more than RETAIN events, so reads cross from the store into memory
      const total = EventJournalLive.RETAIN * 3 + 300
      for (let i = 0; i < total; i++) {
        bus.publishUnsafe(eventAt("s", i, 50))
        if (i % 3 === 0) bus.publishUnsafe(eventAt("other", i, 7))
        // let the worker read the store's last seq and write at boundaries, now and then
        if (i % 97 === 0) yield* Effect.yieldNow
      }
      expect(yield* journal.last("s")).toBe(total)
      // the worker wrote at the boundaries: most of the session is in the store already
      expect((yield* store.journal!.last("s"))).toBeGreaterThan(2 * EventJournalLive.RETAIN)
      for (let cut = 0; cut <= total; cut += cut < 60 ? 1 : 37) {
        const got = yield* journal.read("s", cut)
        expect(seqs(got)).toEqual(range(cut + 1, total))
        expect(got[0]?.event).toEqual(cut < total ? eventAt("s", cut, 50) : undefined)
      }
      yield* journal.flush
      // everything is in the store now, in order
      expect(seqs(yield* store.journal!.read("s", 0))).toEqual(range(1, total))
      expect(seqs(yield* journal.read("other", 10))).toEqual(range(11, Math.ceil(total / 3)))
    })))

  it.effect("a follower cut off at any point and resuming after its last seq misses nothing and gets nothing twice", () =>
    Effect.scoped(Effect.gen(function*() {
      const { journal, bus } = yield* setup
      const total = 400
      for (const cut of [0, 1, 2, 49, 50, 51, 120, 199, 250, 333, 399]) {
        const key = `s${cut}`
        const first = yield* journal.follow(key).pipe(Stream.take(cut), Stream.runCollect, Effect.forkChild)
        const all = yield* journal.follow(key).pipe(Stream.take(total), Stream.runCollect, Effect.forkChild)
        for (let i = 0; i < total; i++) {
          bus.publishUnsafe(eventAt(key, i, 50))
          if (i % 13 === 0) yield* Effect.yieldNow
        }
        const before = cut === 0 ? [] : yield* Fiber.join(first)
        if (cut === 0) yield* Fiber.interrupt(first)
        const resumed = yield* journal.follow(key, before.at(-1)?.seq ?? 0).pipe(Stream.take(total - cut), Stream.runCollect)
        expect([...seqs(before), ...seqs(resumed)]).toEqual(range(1, total))
        expect(seqs(yield* Fiber.join(all))).toEqual(range(1, total))
        expect(resumed.at(-1)?.event).toEqual(eventAt(key, total - 1, 50))
      }
    })))

  it.effect("a follower that joins before the events waits for them; one that joins late catches up from the store", () =>
    Effect.scoped(Effect.gen(function*() {
      const { journal, bus } = yield* setup
      const early = yield* journal.follow("s", 0).pipe(Stream.take(3), Stream.runCollect, Effect.forkChild)
      yield* Effect.yieldNow
      for (let i = 0; i < 3; i++) bus.publishUnsafe(eventAt("s", i, 2))
      expect(seqs(yield* Fiber.join(early))).toEqual([1, 2, 3])
      yield* journal.flush
      const late = yield* journal.follow("s", 1).pipe(Stream.take(2), Stream.runCollect)
      expect(seqs(late)).toEqual([2, 3])
    })))

  it.effect("a new journal over the same store numbers on from the stored last seq; removing the session removes its journal", () =>
    Effect.gen(function*() {
      const store = yield* SessionStoreMemory.make()
      yield* Effect.scoped(Effect.gen(function*() {
        const recording = yield* EventJournalLive.make(store)
        const bus = yield* EventBusLive.make(16, recording.observe)
        for (let i = 0; i < 5; i++) bus.publishUnsafe(eventAt("s", i, 100))
        // no boundary among them: closing the journal's scope writes them
      }))
      expect(seqs(yield* store.journal!.read("s", 0))).toEqual([1, 2, 3, 4, 5])
      yield* store.append("s", [Message.user("u")])
      yield* Effect.scoped(Effect.gen(function*() {
        const recording = yield* EventJournalLive.make(store)
        const bus = yield* EventBusLive.make(16, recording.observe)
        bus.publishUnsafe(eventAt("s", 5, 100))
        yield* recording.journal.flush
        expect(seqs(yield* recording.journal.read("s", 3))).toEqual([4, 5, 6])
      }))
      yield* store.remove("s")
      expect(yield* store.journal!.last("s")).toBe(0)
    }))
})
