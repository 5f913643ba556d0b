/**
 * The `Workspace` layer: the built-in tools confined to one directory, and how a path given by
 * the model is decided to stay inside it.
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import type * as PlatformError from "effect/PlatformError"
import { InvalidConfig, ToolError } from "../domain/errors.ts"
import { type PathRule, Workspace, type WorkspaceFiles, type WorkspaceShape } from "../services/Workspace.ts"
import { localFiles } from "../tools/files.ts"

/** How many symbolic links a single path may pass through, as the kernel's `ELOOP` limit. */
const MAX_LINK_HOPS = 40

const isInside = (path: Path.Path, root: string, candidate: string): boolean => {
  const rel = path.relative(root, candidate)
  return rel === "" || (rel !== ".." && !rel.startsWith(".." + path.sep) && !path.isAbsolute(rel))
}

const isNotFound = (error: PlatformError.PlatformError): boolean =>
  error.reason._tag === "NotFound"

/** What a workspace may be given besides its root. */
export interface WorkspaceOptions {
  /** The host's rules on paths, which the file tools apply to what they really reach (`WorkspaceShape.pathRule`). */
  readonly pathRule?: PathRule
  /**
   * Where the file tools read and write, given the disk under the root (`WorkspaceShape.files`):
   * an editor's buffers for its sessions, the disk for the others. The disk when absent.
   */
  readonly files?: (disk: WorkspaceFiles) => WorkspaceFiles
  /**
   * More directories the file tools may reach, under the same rules (`WorkspaceShape.additional`):
   * Claude Code's `--add-dir`. Relative ones resolve against the current directory; one that is
   * not an existing directory is skipped with a warning, one inside the root adds nothing.
   */
  readonly additionalDirectories?: ReadonlyArray<string>
}

/** Builds the workspace shape; the root is canonicalised once so every later comparison is exact. */
export const make = (root: string, options: WorkspaceOptions = {}): Effect.Effect<WorkspaceShape, InvalidConfig, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const fail = (message: string) => new InvalidConfig({ field: "workspace", message })
    const realRoot = yield* fs.realPath(path.resolve(root)).pipe(
      Effect.mapError((e) => fail(`Workspace root "${root}" cannot be opened: ${e.message}`))
    )
    const info = yield* fs.stat(realRoot).pipe(Effect.mapError((e) => fail(e.message)))
    if (info.type !== "Directory") return yield* Effect.fail(fail(`Workspace root "${root}" is not a directory`))

    const added: Array<string> = []
    for (const directory of options.additionalDirectories ?? []) {
      const real = yield* fs.realPath(path.resolve(directory)).pipe(
        Effect.flatMap((real) => Effect.map(fs.stat(real), (info) => info.type === "Directory" ? real : undefined)),
        Effect.orElseSucceed(() => undefined)
      )
      if (real === undefined) yield* Effect.logWarning(`added directory "${directory}" is not a directory that can be opened; skipped`)
      else if (!isInside(path, realRoot, real) && !added.includes(real)) added.push(real)
    }
    const roots = [realRoot, ...added]
    const inAnyRoot = (candidate: string) => roots.some((root) => isInside(path, root, candidate))
    const where = added.length === 0 ? `the workspace root ${realRoot}` : `the workspace root ${realRoot} and the added directories (${added.join(", ")})`

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
        if (!path.isAbsolute(input) && !inAnyRoot(absolute)) {
          return yield* Effect.fail(
            new ToolError({ message: `Path "${input}" escapes the workspace root; use a path inside the workspace` })
          )
        }
        const real = yield* canonical(input, absolute, 0)
        if (inAnyRoot(real)) return real
        return yield* Effect.fail(
          new ToolError({
            message: path.isAbsolute(input) && !inAnyRoot(absolute)
              ? `Path "${input}" is outside ${where}; use a path relative to the workspace root`
              : `Path "${input}" resolves through a symbolic link to a location outside ${where}; refusing to follow it`
          })
        )
      })

    // a path in an added directory is shown absolute: relative to the root it would read as "../.."
    const display = (absolute: string): string => {
      if (!isInside(path, realRoot, absolute) && added.some((root) => isInside(path, root, absolute))) return absolute.split(path.sep).join("/")
      const rel = path.relative(realRoot, absolute)
      return rel === "" ? "." : rel.split(path.sep).join("/")
    }

    return {
      root: realRoot,
      resolve,
      display,
      pathRule: options.pathRule,
      files: options.files?.(localFiles(realRoot, added)),
      ...(added.length === 0 ? {} : { additional: added })
    }
  })

/** A workspace rooted at `root`, which must be an existing directory. */
export const layer = (root: string, options: WorkspaceOptions = {}): Layer.Layer<Workspace, InvalidConfig, FileSystem.FileSystem | Path.Path> =>
  Layer.effect(Workspace, make(root, options))
