/**
 * The built-in tools: file reading, listing, search and finding by name (read-only), file writing
 * and editing, and shell commands, all confined to one `Workspace`; and `web_fetch`, built only
 * when named.
 *
 * @example
 * ```ts
 * import { Layer } from "effect"
 * import { NodeServices } from "@effect/platform-node"
 * import { builtinTools, ToolRegistryLive, WorkspaceLive } from "effect-agent-loop"
 *
 * const tools = ToolRegistryLive.layer(builtinTools({ enable: ["read_file", "grep"] })).pipe(
 *   Layer.provide(WorkspaceLive.layer(process.cwd())),
 *   Layer.provide(NodeServices.layer)
 * )
 * ```
 */
import type * as FileSystem from "effect/FileSystem"
import type * as Path from "effect/Path"
import type * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import type { Tool } from "../domain/Tool.ts"
import type { CurrentTurn } from "../services/CurrentTurn.ts"
import { type EditFileOptions, makeEditFile } from "./editFile.ts"
import { type ExecOptions, makeExec } from "./exec.ts"
import { execKill, execOutput } from "./execJobs.ts"
import { type GlobOptions, makeGlob } from "./glob.ts"
import { type GrepOptions, makeGrep } from "./grep.ts"
import { type ListDirOptions, makeListDir } from "./listDir.ts"
import { makeReadFile, type ReadFileOptions } from "./readFile.ts"
import { todoWrite } from "./todoWrite.ts"
import type { Workspace } from "./workspace.ts"
import { BuiltinToolName } from "./builtinToolName.ts"
import { makeWebFetch, type WebFetchOptions } from "./webFetch.ts"
import { makeWriteFile, type WriteFileOptions } from "./writeFile.ts"

export * from "./editFile.ts"
export * from "./exec.ts"
export { execKill, execOutput, MAX_OUTPUT_WAIT_MS } from "./execJobs.ts"
export { BackgroundJobs, type BackgroundJobsShape, type JobInfo, type JobOutput, type JobState, MAX_JOBS, MAX_OUTPUT_BYTES } from "./backgroundJobs.ts"
export * from "./glob.ts"
export * from "./grep.ts"
export { requiredLiterals, ripgrepPattern } from "./grepPattern.ts"
export { type LineMatch, type LineMatcher, type LineMatcherOptions, makeLineMatcher, REGEX_THREAD_NAME, RegexTimeout } from "./lineMatcher.ts"
export * from "./listDir.ts"
export { gitHooksDirectory, isProtectedPath, locationsWithin, PROTECTED_LOCATIONS } from "./protected.ts"
export * from "./readFile.ts"
export * from "./workspace.ts"
export { isPublicAddress } from "./netAddress.ts"
export * from "./webFetch.ts"
export * from "./writeFile.ts"

export * from "./builtinToolName.ts"

/** What the built-in tools need from the context; `ToolRegistryLive.layer` takes it once. */
export type BuiltinToolRequirements =
  | Workspace
  | FileSystem.FileSystem
  | Path.Path
  | ChildProcessSpawner.ChildProcessSpawner

/** Which built-in tools to build, and their limits. */
export interface BuiltinToolsOptions {
  /**
   * The tools to include; when absent, all but `web_fetch` (which reaches the network, so it is
   * built only when named). Decode user input with the `BuiltinToolName` Schema.
   */
  readonly enable?: ReadonlyArray<BuiltinToolName>
  readonly readFile?: ReadFileOptions
  readonly listDir?: ListDirOptions
  readonly grep?: GrepOptions
  readonly glob?: GlobOptions
  readonly writeFile?: WriteFileOptions
  readonly editFile?: EditFileOptions
  readonly exec?: ExecOptions
  readonly webFetch?: WebFetchOptions
  /**
   * More protected locations for `write_file` and `edit_file`, relative to the workspace root:
   * writes there need approval, as in `PROTECTED_LOCATIONS` (added to each tool's own `protect`).
   */
  readonly protect?: ReadonlyArray<string>
}

const withProtect = <O extends { readonly protect?: ReadonlyArray<string> }>(own: O | undefined, protect: ReadonlyArray<string> | undefined): O | undefined =>
  protect === undefined ? own : Object.assign({}, own, { protect: [...(own?.protect ?? []), ...protect] })

/** The selected built-in tools, ready for `ToolRegistryLive.layer` (`todo_write` reaches the turn through `CurrentTurn`, given per call). */
export const builtinTools = (options: BuiltinToolsOptions = {}): ReadonlyArray<Tool<BuiltinToolRequirements | CurrentTurn>> => {
  const all: ReadonlyArray<Tool<BuiltinToolRequirements | CurrentTurn>> = [
    makeReadFile(options.readFile),
    makeListDir(options.listDir),
    makeGrep(options.grep),
    makeGlob(options.glob),
    makeWriteFile(withProtect(options.writeFile, options.protect)),
    makeEditFile(withProtect(options.editFile, options.protect)),
    makeExec(options.exec),
    todoWrite,
    makeWebFetch(options.webFetch)
  ]
  const enabled = new Set<string>(options.enable ?? BuiltinToolName.literals.filter((name) => name !== "web_fetch"))
  // exec's background jobs are read and stopped by these two: they come with it
  return all.filter((tool) => enabled.has(tool.name)).flatMap((tool) => tool.name === "exec" ? [tool, execOutput, execKill] : [tool])
}
