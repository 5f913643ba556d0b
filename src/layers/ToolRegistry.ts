/**
 * The in-memory `ToolRegistry`: the tools given to the layer, and those registered later for the
 * life of a scope (MCP servers, plugins).
 *
 * @example
 * ```ts
 * import { listDir, readFile, ToolRegistryLive } from "effect-agent-loop"
 * const tools = ToolRegistryLive.layer([listDir, readFile])
 * ```
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { doneNow } from "../domain/doneNow.ts"
import type * as Tool from "../domain/Tool.ts"
import type { CurrentTurn } from "../services/CurrentTurn.ts"
import { type RegisteredTool, ToolRegistry, type ToolRegistryShape } from "../services/ToolRegistry.ts"
import * as BackgroundJobsTable from "../tools/backgroundJobs.ts"
import { BackgroundJobs } from "../tools/backgroundJobs.ts"

/**
 * A registry over a mutable list; `register` adds for the life of a scope. The winning tools are
 * worked out when the list changes, so `list` returns the same array until it changes again.
 */
export const make = (initial: ReadonlyArray<RegisteredTool>): ToolRegistryShape => {
  let entries: ReadonlyArray<RegisteredTool> = initial
  const find = (name: string) => {
    for (let i = entries.length - 1; i >= 0; i--) if (entries[i]!.name === name) return Option.some(entries[i]!)
    // an MCP tool called by Claude Code's name for it (`mcp__server__tool`), whatever it is registered as
    if (name.startsWith("mcp__")) {
      for (let i = entries.length - 1; i >= 0; i--) {
        const mcp = entries[i]!.mcp
        if (mcp !== undefined && name === `mcp__${mcp.server}__${mcp.tool}`) return Option.some(entries[i]!)
      }
    }
    return Option.none()
  }
  const winners = () => {
    const seen = new Set<string>()
    return entries.filter((t) => find(t.name).pipe(Option.exists((winner) => winner === t)) && !seen.has(t.name) && seen.add(t.name))
  }
  let listed = winners()
  const set = (next: ReadonlyArray<RegisteredTool>) => {
    entries = next
    listed = winners()
  }
  return {
    list: Effect.sync(() => listed),
    get: (name) => Effect.sync(() => find(name)),
    register: (tools) =>
      Effect.acquireRelease(
        Effect.sync(() => set([...entries, ...tools])),
        () => Effect.sync(() => set(entries.filter((t) => !tools.includes(t))))
      )
  }
}

/**
 * A registry holding `tools`. Whatever the tools need, other than what the loop provides per
 * call (`CurrentTurn`), is taken from the layer's context once: the layer requires the union of
 * the tools' requirements, e.g. `[lookupOrder, research]` (needing `OrderDb` and `CurrentTurn`)
 * gives a layer that requires `OrderDb`.
 */
export const layer = <const Tools extends ReadonlyArray<Tool.Any>>(
  tools: Tools
): Layer.Layer<ToolRegistry, never, Exclude<Tool.Requirements<Tools[number]>, CurrentTurn>> =>
  Layer.effect(ToolRegistry, Effect.gen(function*() {
    // the registry owns exec's background jobs: they are killed when it goes
    const jobs = yield* BackgroundJobsTable.make(yield* Effect.scope)
    const context = Context.add(yield* Effect.context<Exclude<Tool.Requirements<Tools[number]>, CurrentTurn>>(), BackgroundJobs, jobs)
    const entries = tools.map((tool): RegisteredTool => ({
      ...tool,
      execute: (args, ctx) => {
        const run = tool.execute(args, ctx)
        // A tool that answered at once needs nothing from a context: no step to provide one.
        return doneNow(run) ?? Effect.provideContext(run, context as Context.Context<any>)
      }
    }))
    return { ...make(entries), jobs }
  }))
