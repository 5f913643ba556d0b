/**
 * The memory store keeps the same log as the others: append-only, `load` the view, `list` with
 * what it knows (the Clock's time of the last append).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { Message, SessionStoreMemory } from "effect-agent-loop"

describe("SessionStore.memory", () => {
  it.effect("appends entries, loads the view, logs everything, lists and removes", () =>
    Effect.gen(function*() {
      const store = yield* SessionStoreMemory.make({ seeded: [Message.user("from the seed")] })
      expect(yield* store.load("s")).toEqual([])
      yield* TestClock.adjust("5 seconds")
      yield* store.append("s", [Message.user("u1"), Message.assistant("a1"), Message.user("u2")])
      yield* store.append("s", [{ role: "compaction", reason: "budget", cut: 2 }])
      yield* store.append("s", [])
      expect(yield* store.load("s")).toEqual([Message.user("u2")])
      expect(yield* store.log("s")).toEqual([
        Message.user("u1"),
        Message.assistant("a1"),
        Message.user("u2"),
        { role: "compaction", reason: "budget", cut: 2 }
      ])
      expect(yield* store.list).toEqual([
        { sessionKey: "seeded", messages: 1, turns: 1, preview: "from the seed" },
        { sessionKey: "s", updatedAt: 5000, messages: 3, turns: 2, preview: "u1" }
      ])
      yield* store.remove("s")
      expect(yield* store.log("s")).toEqual([])
      expect((yield* store.list).map((info) => info.sessionKey)).toEqual(["seeded"])
    }))

  it.effect("the log a caller got is a copy: changing it changes nothing stored", () =>
    Effect.gen(function*() {
      const store = yield* SessionStoreMemory.make()
      yield* store.append("s", [Message.user("u1")])
      const log = (yield* store.log("s")) as Array<Message.Message>
      log.push(Message.user("sneaked in"))
      const view = (yield* store.load("s")) as Array<Message.Message>
      view.length = 0
      expect(yield* store.log("s")).toEqual([Message.user("u1")])
      expect(yield* store.load("s")).toEqual([Message.user("u1")])
    }))
})
