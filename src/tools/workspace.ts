/**
 * `Workspace`: the directory the built-in tools may touch, and the one place that decides whether
 * a path given by the model stays inside it. The file tools then open the path `resolve` returned
 * through `confined.ts`, which refuses a link met on the way, so the decision cannot be undone by
 * a directory swapped for a link in between.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { NodeServices } from "@effect/platform-node"
 * import { Workspace, WorkspaceLive } from "effect-agent-loop"
 *
 * const program = Effect.gen(function*() {
 *   const workspace = yield* Workspace
 *   return yield* workspace.resolve("src/index.ts") // fails with a ToolError for "../etc/passwd"
 * }).pipe(Effect.provide(WorkspaceLive.layer("/home/me/project")), Effect.provide(NodeServices.layer))
 * ```
 */
import { Context, Duration, Effect, FileSystem, Option, Path, type PlatformError } from "effect"
import { ConfigError, ToolError } from "../domain/errors.ts"

/** How many symbolic links a single path may pass through, as the kernel's `ELOOP` limit. */
const MAX_LINK_HOPS = 40

/** The workspace root and its confinement rule. */
export interface WorkspaceShape {
  /** The canonical (symlink-free) absolute root. */
  readonly root: string
  /**
   * The absolute, canonical path for `input` (relative paths resolve against the root), or a
   * `ToolError` when it escapes the root lexically (`..`), is absolute outside it, or reaches
   * outside through a symbolic link, including one on the parent of a file not yet created.
   */
  readonly resolve: (input: string) => Effect.Effect<string, ToolError>
  /** `absolute` relative to the root, `/`-separated; `.` for the root itself. For tool output. */
  readonly display: (absolute: string) => string
}

/** The workspace the built-in tools are confined to; `WorkspaceLive.layer(root)` provides one. */
export class Workspace extends Context.Service<Workspace, WorkspaceShape>()("effect-agent-loop/Workspace") {}

const isInside = (path: Path.Path, root: string, candidate: string): boolean => {
  const rel = path.relative(root, candidate)
  return rel === "" || (rel !== ".." && !rel.startsWith(".." + path.sep) && !path.isAbsolute(rel))
}

const isNotFound = (error: PlatformError.PlatformError): boolean =>
  error.reason._tag === "NotFound"

/** Builds the workspace shape; the root is canonicalised once so every later comparison is exact. */
export const makeWorkspace = (root: string): Effect.Effect<WorkspaceShape, ConfigError, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const fail = (message: string) => new ConfigError({ field: "workspace", message })
    const realRoot = yield* fs.realPath(path.resolve(root)).pipe(
      Effect.mapError((e) => fail(`Workspace root "${root}" cannot be opened: ${e.message}`))
    )
    const info = yield* fs.stat(realRoot).pipe(Effect.mapError((e) => fail(e.message)))
    if (info.type !== "Directory") return yield* Effect.fail(fail(`Workspace root "${root}" is not a directory`))

    const ioError = (input: string, error: PlatformError.PlatformError) =>
      new ToolError({ message: `Cannot resolve path "${input}": ${error.message}` })

    /**
     * The canonical form of `absolute`: the real path of its deepest existing ancestor joined with
     * the missing tail. A dangling link is followed by hand, since `realPath` cannot see through it.
     */
    const canonical = (input: string, absolute: string, hops: number): Effect.Effect<string, ToolError> =>
      Effect.gen(function*() {
        let current = absolute
        const tail: Array<string> = []
        while (true) {
          const found = yield* fs.lstat(current).pipe(
            Effect.map(Option.some),
            Effect.catchIf(isNotFound, () => Effect.succeed(Option.none())),
            Effect.mapError((e) => ioError(input, e))
          )
          if (Option.isSome(found)) {
            const real = yield* fs.realPath(current).pipe(
              Effect.map(Option.some),
              Effect.catchIf(isNotFound, () => Effect.succeed(Option.none())),
              Effect.mapError((e) => ioError(input, e))
            )
            if (Option.isSome(real)) return path.join(real.value, ...tail)
            if (hops >= MAX_LINK_HOPS) {
              return yield* Effect.fail(new ToolError({ message: `Path "${input}" passes through too many symbolic links` }))
            }
            const target = yield* fs.readLink(current).pipe(Effect.mapError((e) => ioError(input, e)))
            return yield* canonical(input, path.join(path.resolve(path.dirname(current), target), ...tail), hops + 1)
          }
          const parent = path.dirname(current)
          if (parent === current) return path.join(current, ...tail)
          tail.unshift(path.basename(current))
          current = parent
        }
      })

    const resolve = (input: string): Effect.Effect<string, ToolError> =>
      Effect.gen(function*() {
        const absolute = path.resolve(realRoot, input)
        if (!path.isAbsolute(input) && !isInside(path, realRoot, absolute)) {
          return yield* Effect.fail(
            new ToolError({ message: `Path "${input}" escapes the workspace root; use a path inside the workspace` })
          )
        }
        const real = yield* canonical(input, absolute, 0)
        if (isInside(path, realRoot, real)) return real
        return yield* Effect.fail(
          new ToolError({
            message: path.isAbsolute(input) && !isInside(path, realRoot, absolute)
              ? `Path "${input}" is outside the workspace root ${realRoot}; use a path relative to the workspace root`
              : `Path "${input}" resolves through a symbolic link to a location outside the workspace root; refusing to follow it`
          })
        )
      })

    const display = (absolute: string): string => {
      const rel = path.relative(realRoot, absolute)
      return rel === "" ? "." : rel.split(path.sep).join("/")
    }

    return { root: realRoot, resolve, display }
  })

/**
 * How long one call of a file tool may take before the loop gives up on it with an error result.
 * Nothing a file tool does should come near it; it bounds what cannot be foreseen (a stalled
 * network file system, a pathological pattern given a long deadline).
 */
export const DEFAULT_FILE_TOOL_TIMEOUT = Duration.seconds(30)
