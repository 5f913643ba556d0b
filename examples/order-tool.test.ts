/**
 * Testing the order tools of `order-tool.ts` as an application would: the whole loop over a
 * scripted model (`effect-agent-loop/testing`), the `OrderDb` the tools need provided by the test,
 * and what the tools did checked in the database and in the results the model saw.
 *
 *     npx vitest run examples/order-tool.test.ts
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { AgentLoop, type Message } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { cancelOrder, lookupOrder, OrderDb, OrderDbInMemory } from "./order-tool.ts"

const orders = OrderDbInMemory([{ id: "A-17", status: "paid", item: "kettle" }, { id: "B-2", status: "shipped", item: "toaster" }])

const results = (messages: ReadonlyArray<Message.Message>) =>
  messages.flatMap((m) => m.role === "tool" ? [{ content: m.content, isError: m.isError === true }] : [])

describe("the order tools", () => {
  it.effect("cancel a paid order, and refuse a shipped one with a reason the model sees", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "Cancel A-17 and B-2")
      expect(results(result.messages)).toEqual([
        { content: "order A-17 cancelled", isError: false },
        { content: "order B-2 is shipped: it cannot be cancelled", isError: true }
      ])
      expect((yield* (yield* OrderDb).find("A-17"))?.status).toBe("cancelled")
    }).pipe(
      // `Testing.layer` requires `OrderDb` (the tools' type says they need it): the test provides it
      Effect.provide(Testing.layer({
        tools: [lookupOrder, cancelOrder],
        script: [
          { toolCalls: [{ name: "cancel_order", arguments: { id: "A-17" } }, { name: "cancel_order", arguments: { id: "B-2" } }] },
          { content: "Done." }
        ]
      }).pipe(Layer.provideMerge(orders)))
    ))

  it.effect("an unknown order is an error result naming it, not a failed turn", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "Where is Z-9?")
      expect(result.status).toBe("completed")
      expect(results(result.messages)).toEqual([{ content: "No order Z-9: check the number with the customer", isError: true }])
    }).pipe(
      Effect.provide(Testing.layer({
        tools: [lookupOrder],
        script: [{ toolCalls: [{ name: "lookup_order", arguments: { id: "Z-9" } }] }, { content: "I cannot find it." }]
      }).pipe(Layer.provide(Layer.succeed(OrderDb, { find: () => Effect.succeed(undefined), setStatus: () => Effect.void }))))
    ))
})
