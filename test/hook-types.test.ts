/**
 * Each handler's return type is exactly what its point may do. The `@ts-expect-error` lines are
 * checked by `npm run typecheck` (part of CI): if a wrong return ever type-checks, the unused
 * directive is itself an error.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Hook from "../src/domain/Hook.ts"

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

describe("hook handler types", () => {
  it("valid hooks are values with handlers", () => {
    expect(allowed.every((hook) => Object.values(hook).every((handler) => typeof handler === "function"))).toBe(true)
    expect(wrong).toHaveLength(7)
  })
})
