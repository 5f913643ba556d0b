/**
 * What tools need from the context, as the types say it: `ToolRegistryLive.layer` and
 * `Testing.layer` require every service their tools need (the union, not the first tool's), less
 * `CurrentTurn`, which the loop provides per call. `npm run typecheck` checks the types of this
 * file (`expectTypeOf`, `@ts-expect-error`); vitest runs its turns.
 */
import { describe, expect, expectTypeOf, it } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { AgentLoop, CurrentTurn, Tool, type ToolRegistry, ToolRegistryLive } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"

class OrderDb extends Context.Service<OrderDb, { readonly status: (id: string) => Effect.Effect<string> }>()("test/OrderDb") {}
class Clock2 extends Context.Service<Clock2, { readonly now: string }>()("test/Clock2") {}

const lookupOrder = Tool.make({
  name: "lookup_order",
  description: "An order's status",
  parameters: Schema.Struct({ id: Schema.String }),
  readOnly: true,
  execute: ({ id }) => Effect.gen(function*() { return yield* (yield* OrderDb).status(id) })
})

const research = Tool.make({
  name: "research",
  description: "The turn's session",
  parameters: Schema.Struct({}),
  execute: () => Effect.gen(function*() { return (yield* CurrentTurn).sessionKey })
})

const when = Tool.make({
  name: "when",
  description: "The time",
  parameters: Schema.Struct({}),
  execute: () => Effect.gen(function*() { return (yield* Clock2).now })
})

const plain = Tool.make({
  name: "plain",
  description: "Needs nothing",
  parameters: Schema.Struct({}),
  execute: () => Effect.succeed("ok")
})

const OrderDbTest = Layer.succeed(OrderDb, { status: (id) => Effect.succeed(`order ${id}: shipped`) })

describe("the requirements of tools, in the types", () => {
  it("Tool.Requirements is the union of the tools' requirements", () => {
    expectTypeOf<Tool.Requirements<typeof lookupOrder | typeof research | typeof plain>>().toEqualTypeOf<OrderDb | CurrentTurn>()
    expectTypeOf<Tool.Requirements<typeof plain>>().toEqualTypeOf<never>()
  })

  it("ToolRegistryLive.layer requires what every tool needs, less CurrentTurn", () => {
    const both = ToolRegistryLive.layer([lookupOrder, research])
    expectTypeOf<Layer.Success<typeof both>>().toEqualTypeOf<ToolRegistry>()
    expectTypeOf<Layer.Error<typeof both>>().toEqualTypeOf<never>()
    expectTypeOf<Layer.Services<typeof both>>().toEqualTypeOf<OrderDb>()
    expectTypeOf<Layer.Services<ReturnType<typeof three>>>().toEqualTypeOf<OrderDb | Clock2>()
    expectTypeOf<Layer.Services<ReturnType<typeof none>>>().toEqualTypeOf<never>()
    expectTypeOf<Layer.Services<ReturnType<typeof empty>>>().toEqualTypeOf<never>()
    const some: ReadonlyArray<Tool.Tool<OrderDb>> = [lookupOrder]
    expectTypeOf<Layer.Services<ReturnType<typeof fromArray>>>().toEqualTypeOf<OrderDb>()
    function three() { return ToolRegistryLive.layer([research, lookupOrder, when]) }
    function none() { return ToolRegistryLive.layer([plain, research]) }
    function empty() { return ToolRegistryLive.layer([]) }
    function fromArray() { return ToolRegistryLive.layer(some) }
  })

  it("Testing.layer requires what its tools need, for the test to provide", () => {
    const loop = Testing.layer({ tools: [research, lookupOrder], script: [] })
    expectTypeOf<Layer.Services<typeof loop>>().toEqualTypeOf<OrderDb>()
    const toolless = Testing.layer({ script: [] })
    expectTypeOf<Layer.Services<typeof toolless>>().toEqualTypeOf<never>()
    const provided = loop.pipe(Layer.provide(OrderDbTest))
    expectTypeOf<Layer.Services<typeof provided>>().toEqualTypeOf<never>()
  })

  it("an effect run with a tool's service missing does not type-check", () => {
    const turn = Effect.gen(function*() { return yield* (yield* AgentLoop).turn("s", "hi") })
    const missing = turn.pipe(Effect.provide(Testing.layer({ tools: [lookupOrder], script: [] })))
    expectTypeOf<Effect.Services<typeof missing>>().toEqualTypeOf<OrderDb>()
    const run = () =>
      // @ts-expect-error OrderDb is still required: such an effect cannot be run
      Effect.runFork(missing)
    expectTypeOf(run).toBeFunction()
  })
})

describe("a tool that needs a service, in a test loop", () => {
  it.effect("runs with the service the test provides", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "where is my order?")
      const [, second] = yield* Testing.requests
      expect(second!.messages.at(-2)!.content).toBe("order 42: shipped")
      expect(second!.messages.at(-1)!.content).toBe("s")
      expect(result.finalMessage?.content).toBe("it has shipped")
    }).pipe(Effect.provide(Testing.layer({
      tools: [lookupOrder, research],
      script: [
        { toolCalls: [{ id: "c1", name: "lookup_order", arguments: { id: "42" } }, { id: "c2", name: "research" }] },
        { content: "it has shipped" }
      ]
    }).pipe(Layer.provide(OrderDbTest)))))
})
