/**
 * `ToolRegistry`: the tools a turn may call.
 *
 * @example
 * ```ts
 * import { listDir, readFile, ToolRegistry } from "effect-agent-loop"
 * const tools = ToolRegistry.layer([listDir, readFile])
 * ```
 */
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import type { Tool } from "../domain/Tool.ts"
import type { CurrentTurn } from "./CurrentTurn.ts"

/** A tool whose remaining needs the loop provides per call. */
export type RegisteredTool = Tool<CurrentTurn>

/** The registry. */
export interface ToolRegistryShape {
  /** The tools now registered, in registration order. */
  readonly list: Effect.Effect<ReadonlyArray<RegisteredTool>>
  /** A tool by name. */
  readonly get: (name: string) => Effect.Effect<Option.Option<RegisteredTool>>
  /** Adds tools for the life of the scope (MCP servers, plugins); a later tool of the same name wins. */
  readonly register: (tools: ReadonlyArray<RegisteredTool>) => Effect.Effect<void, never, Scope.Scope>
}

/** The tool registry service. */
export class ToolRegistry extends Context.Service<ToolRegistry, ToolRegistryShape>()("effect-agent-loop/ToolRegistry") {
  /**
   * A registry holding `tools`. Whatever the tools need, other than what the loop provides per
   * call (`CurrentTurn`), is taken from the layer's context once.
   */
  static layer<R = never>(
    tools: ReadonlyArray<Tool<R>>
  ): Layer.Layer<ToolRegistry, never, Exclude<R, CurrentTurn>> {
    return Layer.effect(ToolRegistry, Effect.gen(function*() {
      const context = yield* Effect.context<Exclude<R, CurrentTurn>>()
      const entries = tools.map((tool): RegisteredTool => ({
        ...tool,
        execute: (args, ctx) => {
          const run = tool.execute(args, ctx)
          // A tool that answered at once (an Exit) needs nothing from a context: no step to provide one.
          return Exit.isExit(run) ? run as ReturnType<RegisteredTool["execute"]> : Effect.provideContext(run, context as Context.Context<any>)
        }
      }))
      return makeRegistry(entries)
    }))
  }
}

/**
 * A registry over a mutable list; `register` adds for the life of a scope. The winning tools are
 * worked out when the list changes, so `list` returns the same array until it changes again.
 */
export const makeRegistry = (initial: ReadonlyArray<RegisteredTool>): ToolRegistryShape => {
  let entries: ReadonlyArray<RegisteredTool> = initial
  const find = (name: string) => {
    for (let i = entries.length - 1; i >= 0; i--) if (entries[i]!.name === name) return Option.some(entries[i]!)
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
