/**
 * `ToolRegistry`: the tools a turn may call.
 *
 * @example
 * ```ts
 * import { listDir, readFile, ToolRegistryLive } from "effect-agent-loop"
 * const tools = ToolRegistryLive.layer([listDir, readFile])
 * ```
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type { Tool } from "../domain/Tool.ts"
import type { BackgroundJobsShape } from "../tools/backgroundJobs.ts"
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
  /** The background jobs `exec` started (`background: true`), when the registry owns a job table (`ToolRegistryLive.layer` does). */
  readonly jobs?: Pick<BackgroundJobsShape, "list" | "kill">
}

/** The tool registry service; `ToolRegistryLive.layer(tools)` provides one. */
export class ToolRegistry extends Context.Service<ToolRegistry, ToolRegistryShape>()("effect-agent-loop/ToolRegistry") {}
