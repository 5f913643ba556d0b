/**
 * A tool backed by a service of the application: the order tools need an `OrderDb`, their type
 * says so, and the layer that provides it goes under the tool registry, as any Effect layer. The
 * same tools run here on an in-memory database and in `order-tool.test.ts` on a stub. Offline, on
 * a scripted model:
 *
 *     npm run example examples/order-tool.ts
 */
import { Context, Effect, Layer, Schema } from "effect"
import { AgentLoop, AgentLoopLive, Scripted, SessionStoreMemory, Tool, ToolError, ToolRegistryLive } from "effect-agent-loop"

/** An order as the shop keeps it. */
export interface Order {
  readonly id: string
  readonly status: "paid" | "shipped" | "cancelled"
  readonly item: string
}

/** The shop's orders: the service the tools need. */
export class OrderDb extends Context.Service<OrderDb, {
  readonly find: (id: string) => Effect.Effect<Order | undefined>
  readonly setStatus: (id: string, status: Order["status"]) => Effect.Effect<void>
}>()("shop/OrderDb") {}

/** An `OrderDb` over a map, starting with `orders`. */
export const OrderDbInMemory = (orders: ReadonlyArray<Order>): Layer.Layer<OrderDb> =>
  Layer.sync(OrderDb, () => {
    const byId = new Map(orders.map((order) => [order.id, order]))
    return {
      find: (id) => Effect.sync(() => byId.get(id)),
      setStatus: (id, status) =>
        Effect.sync(() => {
          const order = byId.get(id)
          if (order !== undefined) byId.set(id, { ...order, status })
        })
    }
  })

const orderNotFound = (id: string) => new ToolError({ message: `No order ${id}: check the number with the customer` })

/** `Tool<OrderDb>`: reading an order. */
export const lookupOrder = Tool.make({
  name: "lookup_order",
  description: "The status and item of an order",
  parameters: Schema.Struct({ id: Schema.String }),
  readOnly: true,
  execute: ({ id }) =>
    Effect.gen(function*() {
      const order = yield* (yield* OrderDb).find(id)
      if (order === undefined) return yield* orderNotFound(id)
      return `order ${order.id}: ${order.item}, ${order.status}`
    })
})

/** `Tool<OrderDb>`: cancelling an order that has not shipped. */
export const cancelOrder = Tool.make({
  name: "cancel_order",
  description: "Cancels an order that has not shipped yet",
  parameters: Schema.Struct({ id: Schema.String }),
  execute: ({ id }) =>
    Effect.gen(function*() {
      const db = yield* OrderDb
      const order = yield* db.find(id)
      if (order === undefined) return yield* orderNotFound(id)
      if (order.status !== "paid") return { content: `order ${id} is ${order.status}: it cannot be cancelled`, isError: true }
      yield* db.setStatus(id, "cancelled")
      return `order ${id} cancelled`
    })
})

/** The registry of the order tools: `Layer<ToolRegistry, never, OrderDb>` until a database is provided. */
export const orderTools = ToolRegistryLive.layer([lookupOrder, cancelOrder])

if (import.meta.main) {
  const model = Scripted.layer([
    { toolCalls: [{ name: "lookup_order", arguments: { id: "A-17" } }, { name: "lookup_order", arguments: { id: "B-2" } }] },
    { toolCalls: [{ name: "cancel_order", arguments: { id: "A-17" } }, { name: "cancel_order", arguments: { id: "B-2" } }] },
    { content: "A-17 (a kettle) is cancelled; B-2 has already shipped, so it cannot be." }
  ])
  const loop = AgentLoopLive.layer({ model: "scripted" }).pipe(
    Layer.provide([model, orderTools, SessionStoreMemory.layer()]),
    Layer.provide(OrderDbInMemory([{ id: "A-17", status: "paid", item: "kettle" }, { id: "B-2", status: "shipped", item: "toaster" }]))
  )
  const program = Effect.gen(function*() {
    const result = yield* (yield* AgentLoop).turn("support", "Cancel my orders A-17 and B-2.")
    for (const message of result.messages) {
      if (message.role === "tool") console.log(`[tool] ${message.toolName}: ${message.content}${message.isError ? " (error)" : ""}`)
    }
    console.log(`[answer] ${result.finalMessage?.content}`)
  })
  Effect.runPromise(program.pipe(Effect.provide(loop)))
}
