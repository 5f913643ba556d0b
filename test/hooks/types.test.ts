/**
 * Each handler's return type is exactly what its point may do. The `@ts-expect-error` lines are
 * checked by `npm run typecheck` (part of CI): if a wrong return ever type-checks, the unused
 * directive is itself an error.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Hook, Tool } from "effect-agent-loop"
import type { PointRule } from "../../src/layers/internal/hookPoints.ts"

const allowed: ReadonlyArray<Hook.Hook> = [
  Hook.make({ beforeTool: () => Hook.deny("no") }),
  Hook.make({ beforeTool: () => Hook.modify({ arguments: { path: "x" } }) }),
  Hook.make({ beforeTool: () => Effect.succeed(Hook.hardAbort("stop")) }),
  Hook.make({ approveTool: () => Hook.approve }),
  Hook.make({ afterTool: () => Hook.patch({ content: "patched" }) }),
  Hook.make({ beforeStop: () => Hook.block("keep going") }),
  Hook.make({ beforeLLMRequest: () => Hook.modify({ model: "small" }) }),
  Hook.make({ beforeTurn: () => Hook.modify({ systemPrompt: "be brief" }) }),
  Hook.make({ beforeCompact: () => Hook.abortTurn("keep it all") }),
  Hook.make({ afterTurn: () => undefined })
]

const wrong: ReadonlyArray<Hook.Hook> = [
  // @ts-expect-error afterTool may only patch or continue, not deny
  Hook.make({ afterTool: () => Hook.deny("too late") }),
  // @ts-expect-error approval cannot hard-abort
  Hook.make({ approveTool: () => Hook.hardAbort("no") }),
  // @ts-expect-error beforeStop cannot deny a tool
  Hook.make({ beforeStop: () => Hook.deny("no") }),
  // @ts-expect-error afterLLMResponse cannot hard-abort
  Hook.make({ afterLLMResponse: () => Hook.hardAbort("no") }),
  // @ts-expect-error beforeSubTurn cannot modify
  Hook.make({ beforeSubTurn: () => Hook.modify({ model: "x" }) }),
  // @ts-expect-error observers return nothing
  Hook.make({ afterTurn: () => Hook.block("no") }),
  // @ts-expect-error beforeTurn cannot approve
  Hook.make({ beforeTurn: () => Effect.succeed(Hook.approve) })
]

// The point table's rows are checked against the handlers' own types.
const rules: ReadonlyArray<PointRule<"afterTool"> | PointRule<"beforeStop">> = [
  // @ts-expect-error afterTool has no decision that stops it
  { stopOn: ["Deny"] } satisfies PointRule<"afterTool">,
  { stopOn: ["Block"] } satisfies PointRule<"beforeStop">
]

// Inputs are the handlers' parameters.
const stopInput: Hook.InputOf<"beforeStop"> = {
  context: { turnId: "t", sessionKey: "s", iteration: 1, depth: 0 },
  finalMessage: { role: "assistant", content: "done" },
  stopHookActive: false
}
// @ts-expect-error a stop decision of beforeTool is not one of beforeStop
const wrongStop: Hook.StopOf<"beforeStop"> = Hook.deny("no")

// A hook on one tool sees that tool's decoded arguments, and rewrites them in the same type.
const transfer = Tool.make({
  name: "transfer",
  description: "Moves money",
  parameters: Schema.Struct({ to: Schema.String, cents: Schema.Int }),
  execute: ({ cents, to }) => Effect.succeed(`${cents} to ${to}`)
})
const typed: ReadonlyArray<Hook.Hook> = [
  Hook.forTool(transfer, { beforeTool: ({ args }) => args.cents > 100 ? Hook.deny(`${args.to}: too much`) : Hook.continue }),
  Hook.forTool(transfer, { beforeTool: ({ args }) => Hook.modify({ arguments: { ...args, cents: 100 } }) }),
  Hook.forTool(transfer, { afterTool: ({ args, result }) => Hook.patch({ content: `${result.content} (${args.cents.toFixed(0)})` }) }),
  // @ts-expect-error the arguments have no field `amount`
  Hook.forTool(transfer, { beforeTool: ({ args }) => args.amount > 1 ? Hook.deny("no") : Hook.continue }),
  // @ts-expect-error a rewrite must have the arguments' type
  Hook.forTool(transfer, { beforeTool: () => Hook.modify({ arguments: { to: "x", cents: "100" } }) }),
  // @ts-expect-error afterTool of a typed hook may not deny either
  Hook.forTool(transfer, { afterTool: () => Hook.deny("too late") })
]

describe("hook handler types", () => {
  it("valid hooks are values with handlers", () => {
    expect(allowed.every((hook) => Object.values(hook).every((handler) => typeof handler === "function"))).toBe(true)
    expect(wrong).toHaveLength(7)
    expect(typed.map((hook) => Object.keys(hook))).toEqual([["beforeTool"], ["beforeTool"], ["afterTool"], ["beforeTool"], ["beforeTool"], ["afterTool"]])
    expect([rules.length, stopInput.stopHookActive, wrongStop._tag]).toEqual([2, false, "Deny"])
  })
})
