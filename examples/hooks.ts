/**
 * Hooks: a plain hook that sees every tool call (arguments as JSON), a typed hook on one tool
 * (`Hook.forTool`: its arguments decoded by the tool's Schema), a result patch, and a quality gate
 * that sends the model back once. Offline, on a scripted model:
 *
 *     npm run example examples/hooks.ts
 */
import { Effect, Layer, Schema } from "effect"
import { AgentLoop, AgentLoopLive, Hook, Scripted, SessionStoreMemory, Tool, ToolRegistryLive } from "effect-agent-loop"

const transfer = Tool.make({
  name: "transfer",
  description: "Moves money between two accounts",
  parameters: Schema.Struct({ from: Schema.String, to: Schema.String, cents: Schema.Int }),
  execute: ({ cents, from, to }) => Effect.succeed(`moved ${(cents / 100).toFixed(2)} EUR from ${from} to ${to}`)
})

const closeAccount = Tool.make({
  name: "close_account",
  description: "Closes an account",
  parameters: Schema.Struct({ account: Schema.String }),
  execute: ({ account }) => Effect.succeed(`closed ${account}`)
})

/** Sees every call, whatever the tool: its arguments are JSON (`unknown`). */
const audit = Hook.make({
  beforeTool: ({ call }) => {
    console.log(`[audit] ${call.name} ${JSON.stringify(call.arguments)}`)
    return call.name === "close_account" ? Hook.deny("accounts are closed by a person, not by the assistant") : Hook.continue
  }
})

/** One tool's calls, typed: `args.cents` is a number, and the rewrite has the same type. */
const cap = Hook.forTool(transfer, {
  beforeTool: ({ args }) =>
    args.cents > 50_000
      ? (console.log(`[cap] ${args.cents} cents is over the limit: capped at 50000`), Hook.modify({ arguments: { ...args, cents: 50_000 } }))
      : Hook.continue,
  afterTool: ({ args, result }) => Hook.patch({ content: `${result.content} (reference ${args.from}-${args.to})` })
})

/** The quality gate: an answer must mention the amount, or the model goes back to work once. */
const gate = Hook.make({
  beforeStop: ({ finalMessage, stopHookActive }) =>
    !stopHookActive && !finalMessage.content.includes("EUR")
      ? (console.log(`[gate] "${finalMessage.content}" says no amount: back to the model`), Hook.block("Say how much was moved, in EUR."))
      : Hook.continue
})

const model = Scripted.layer([
  {
    toolCalls: [
      { name: "transfer", arguments: { from: "savings", to: "rent", cents: 80_000 } },
      { name: "close_account", arguments: { account: "savings" } }
    ]
  },
  { content: "Done." },
  { content: "Moved 500.00 EUR to rent (capped); closing the account needs a person." }
])

const loop = AgentLoopLive.layer({ model: "scripted" }).pipe(
  Layer.provide([model, ToolRegistryLive.layer([transfer, closeAccount]), SessionStoreMemory.layer()])
)

const program = Effect.gen(function*() {
  const agent = yield* AgentLoop
  yield* agent.registerHook(audit, { name: "audit" })
  yield* agent.registerHook(cap, { name: "cap" })
  yield* agent.registerHook(gate, { name: "gate" })
  const events = yield* agent.subscribe({ capacity: 256 })
  const result = yield* agent.turn("bank", "Move 800 EUR from savings to rent, then close savings.")
  for (const event of yield* events.takeAll) {
    if (event._tag === "ToolExecStart") {
      const original = event.originalArguments === undefined ? "" : ` (the model asked ${event.originalArguments})`
      console.log(`[ran] ${event.toolName} ${event.arguments}${original}`)
    }
    if (event._tag === "ToolExecEnd" || event._tag === "ToolExecSkipped") {
      console.log(`[result] ${event.toolName}: ${event._tag === "ToolExecEnd" ? event.result : event.reason}`)
    }
  }
  console.log(`[answer] (${result.status}, ${result.iterations} iterations) ${result.finalMessage?.content}`)
})

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(loop)))
