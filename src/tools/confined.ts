/**
 * Opening workspace files so that what is opened is what was checked.
 *
 * `Workspace.resolve` decides by name whether a path stays inside the root. Opening that name
 * afterwards would leave a window in which another process swaps a directory on the way for a
 * symbolic link to somewhere else, and the open would follow it. So the file tools never open a
 * workspace path by name: they open the root as a directory, then each component below it relative
 * to the directory opened before, refusing a symbolic link at every step (`O_NOFOLLOW`). On Linux
 * `/proc/self/fd/N/name` names `name` inside the directory open as `N` (like `openat`), whatever has
 * happened to the path of that directory since. The last component is opened non-blocking and must
 * be a regular file, so a FIFO, socket or device is refused without ever blocking on it.
 *
 * Without `/proc/self/fd` (macOS, the BSDs) the same steps run by name: every component is checked
 * with `lstat` and the final open still refuses a link, but a directory swapped between a check and
 * the next step is not noticed there.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { constants, type Dirent, existsSync, type Stats } from "node:fs"
import * as fsp from "node:fs/promises"
import * as nodePath from "node:path"
import { ToolError } from "../domain/errors.ts"

/** Whether directories can be reached through their descriptors (`/proc/self/fd/N/name`). */
const DESCRIPTOR_PATHS = existsSync("/proc/self/fd")

/** What a directory entry or an opened path is. */
export type FileKind = "file" | "directory" | "symlink" | "fifo" | "socket" | "device" | "other"

/** An entry of a directory. */
export interface Entry {
  readonly name: string
  readonly kind: FileKind
}

/** A directory of the workspace, held open. */
export interface Directory {
  /** The path through which its children are reached: `/proc/self/fd/N` on Linux, else the absolute path. */
  readonly via: string
  /** Its absolute path, for messages and display. */
  readonly absolute: string
}

/** A regular file of the workspace, held open. */
export interface OpenFile {
  readonly handle: fsp.FileHandle
  readonly size: number
}

const kindOf = (entry: Stats | Dirent): FileKind =>
  entry.isFile() ? "file" :
  entry.isDirectory() ? "directory" :
  entry.isSymbolicLink() ? "symlink" :
  entry.isFIFO() ? "fifo" :
  entry.isSocket() ? "socket" :
  entry.isCharacterDevice() || entry.isBlockDevice() ? "device" :
  "other"

const describeKind: Record<FileKind, string> = {
  file: "a file",
  directory: "a directory",
  symlink: "a symbolic link",
  fifo: "a FIFO (named pipe)",
  socket: "a socket",
  device: "a device",
  other: "not a regular file"
}

/** The refusal for a path that is not a regular file. */
export const notRegular = (input: string, kind: Exclude<FileKind, "file">): ToolError =>
  new ToolError({
    message: kind === "directory"
      ? `"${input}" is a directory; use list_dir to see its entries`
      : `"${input}" is ${describeKind[kind]}, not a regular file; the file tools only read and write regular files`
  })

const errnoOf = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error ? String(error.code) : undefined

/** An OS error as a `ToolError` naming the path as the model wrote it. */
const osError = (input: string) => (error: unknown): ToolError => {
  switch (errnoOf(error)) {
    case "ENOENT":
      return new ToolError({ message: `Path "${input}" does not exist` })
    case "EACCES":
    case "EPERM":
      return new ToolError({ message: `Permission denied for "${input}"` })
    case "ELOOP":
    case "ENOTDIR":
      return new ToolError({
        message: `Path "${input}" changed while it was being opened (a symbolic link or a file is now where a directory ` +
          "was); refusing to follow it"
      })
    default:
      return new ToolError({ message: `Cannot access "${input}": ${error instanceof Error ? error.message : String(error)}` })
  }
}

const attempt = <A>(input: string, f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: osError(input) })

const closing = (handle: fsp.FileHandle) => Effect.promise(() => handle.close().catch(() => undefined))

const DIRECTORY_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW

/** Opens `name` inside `parent` as a directory, creating it first when `create` and it is missing. */
const openChild = (parent: Directory, name: string, input: string, create: boolean) =>
  Effect.gen(function*() {
    const via = nodePath.join(parent.via, name)
    const absolute = nodePath.join(parent.absolute, name)
    if (create) {
      yield* Effect.tryPromise({ try: () => fsp.mkdir(via), catch: (e) => e }).pipe(
        Effect.catch((e) => errnoOf(e) === "EEXIST" ? Effect.void : Effect.fail(osError(input)(e)))
      )
    }
    /** Says what is in the way when the component is not a directory. */
    const notDirectory = Effect.gen(function*() {
      const kind = yield* kindIn(parent, name, input)
      return yield* Effect.fail(
        Option.isSome(kind) && kind.value !== "symlink" && kind.value !== "directory"
          ? new ToolError({ message: `Cannot use "${input}": "${name}" on the way is ${describeKind[kind.value]}, not a directory` })
          : osError(input)({ code: "ELOOP" })
      )
    })
    if (!DESCRIPTOR_PATHS) {
      const info = yield* attempt(input, () => fsp.lstat(via))
      return info.isDirectory() ? { via, absolute } : yield* notDirectory
    }
    const handle = yield* Effect.acquireRelease(
      Effect.tryPromise({ try: () => fsp.open(via, DIRECTORY_FLAGS), catch: (e) => e }),
      closing
    ).pipe(
      Effect.catch((e) => {
        const code = errnoOf(e)
        return code === "ENOTDIR" || code === "ELOOP" ? notDirectory : Effect.fail(osError(input)(e))
      })
    )
    return { via: `/proc/self/fd/${handle.fd}`, absolute }
  })

/**
 * Opens the directory `absolute`, which `Workspace.resolve` returned, component by component from
 * `root` without following a link; `create` makes missing directories on the way. `input` is the
 * path as the model wrote it, for messages.
 */
export const openDirectory = (
  root: string,
  absolute: string,
  input: string,
  options: { readonly create?: boolean } = {}
): Effect.Effect<Directory, ToolError, Scope.Scope> =>
  Effect.gen(function*() {
    const relative = nodePath.relative(root, absolute)
    if (relative === ".." || relative.startsWith(`..${nodePath.sep}`) || nodePath.isAbsolute(relative)) {
      return yield* Effect.fail(new ToolError({ message: `Path "${input}" escapes the workspace root` }))
    }
    let directory: Directory = { via: root, absolute: root }
    if (DESCRIPTOR_PATHS) {
      const handle = yield* Effect.acquireRelease(attempt(input, () => fsp.open(root, constants.O_RDONLY | constants.O_DIRECTORY)), closing)
      directory = { via: `/proc/self/fd/${handle.fd}`, absolute: root }
    }
    for (const name of relative.split(nodePath.sep).filter((part) => part !== "")) {
      directory = yield* openChild(directory, name, input, options.create ?? false)
    }
    return directory
  })

/** What `name` inside `directory` is, without following a link; `None` when it does not exist. */
export const kindIn = (directory: Directory, name: string, input: string): Effect.Effect<Option.Option<FileKind>, ToolError> =>
  Effect.tryPromise({ try: () => fsp.lstat(nodePath.join(directory.via, name)), catch: (e) => e }).pipe(
    Effect.map((info) => Option.some(kindOf(info))),
    Effect.catch((e) => errnoOf(e) === "ENOENT" ? Effect.succeed(Option.none()) : Effect.fail(osError(input)(e)))
  )

/** Opens the subdirectory `name` of `directory` without following a link. */
export const openSubdirectory = (directory: Directory, name: string, input: string): Effect.Effect<Directory, ToolError, Scope.Scope> =>
  openChild(directory, name, input, false)

/** What `absolute` (from `Workspace.resolve`) is, without following a link; fails when it does not exist. */
export const kindOfPath = (root: string, absolute: string, input: string): Effect.Effect<FileKind, ToolError> =>
  absolute === root
    ? Effect.succeed("directory")
    : Effect.scoped(Effect.gen(function*() {
      const parent = yield* openDirectory(root, nodePath.dirname(absolute), input)
      const kind = yield* kindIn(parent, nodePath.basename(absolute), input)
      return Option.isSome(kind) ? kind.value : yield* Effect.fail(osError(input)({ code: "ENOENT" }))
    }))

/**
 * Opens the regular file `name` inside `directory`: for reading, or for reading and writing
 * (`create` makes it when missing). Anything else there — a link, a directory, a FIFO, a socket, a
 * device — is refused; it is checked before the open and again on the open descriptor, and the open
 * never blocks.
 */
export const openFile = (
  directory: Directory,
  name: string,
  input: string,
  mode: { readonly write?: boolean; readonly create?: boolean } = {}
): Effect.Effect<OpenFile, ToolError, Scope.Scope> =>
  Effect.gen(function*() {
    const before = yield* kindIn(directory, name, input)
    if (Option.isSome(before) && before.value !== "file") return yield* Effect.fail(notRegular(input, before.value))
    const flags = (mode.write ? constants.O_RDWR : constants.O_RDONLY) | (mode.create ? constants.O_CREAT : 0) |
      constants.O_NOFOLLOW | constants.O_NONBLOCK
    const via = nodePath.join(directory.via, name)
    const handle = yield* Effect.acquireRelease(attempt(input, () => fsp.open(via, flags, 0o666)), closing)
    const info = yield* attempt(input, () => handle.stat())
    const kind = kindOf(info)
    if (kind !== "file") return yield* Effect.fail(notRegular(input, kind))
    return { handle, size: info.size }
  })

/** Opens the regular file at `absolute` (from `Workspace.resolve`) inside `root`; see `openFile`. */
export const openPath = (
  root: string,
  absolute: string,
  input: string,
  mode: { readonly write?: boolean; readonly create?: boolean } = {}
): Effect.Effect<OpenFile, ToolError, Scope.Scope> =>
  Effect.gen(function*() {
    if (absolute === root) return yield* Effect.fail(notRegular(input, "directory"))
    const parent = yield* openDirectory(root, nodePath.dirname(absolute), input, { create: mode.create ?? false })
    return yield* openFile(parent, nodePath.basename(absolute), input, mode)
  })

/** The entries of `directory`, with their kinds (links not followed). */
export const entriesOf = (directory: Directory, input: string): Effect.Effect<ReadonlyArray<Entry>, ToolError> =>
  attempt(input, () => fsp.readdir(directory.via, { withFileTypes: true })).pipe(
    Effect.map((entries) => entries.map((entry) => ({ name: entry.name, kind: kindOf(entry) })))
  )

/** At most `length` bytes of `file` from `position`. */
export const readAt = (file: OpenFile, input: string, position: number, length: number): Effect.Effect<Uint8Array, ToolError> =>
  attempt(input, async () => {
    const buffer = new Uint8Array(length)
    let filled = 0
    while (filled < length) {
      const { bytesRead } = await file.handle.read(buffer, filled, length - filled, position + filled)
      if (bytesRead === 0) break
      filled += bytesRead
    }
    return buffer.subarray(0, filled)
  })

const CHUNK_BYTES = 64 * 1024

/** The bytes of `file` from the start, in chunks. */
export const chunksOf = (file: OpenFile, input: string): Stream.Stream<Uint8Array, ToolError> =>
  Stream.paginate(0, (position) =>
    Effect.map(readAt(file, input, position, CHUNK_BYTES), (chunk) =>
      [chunk.length === 0 ? [] : [chunk], chunk.length < CHUNK_BYTES ? Option.none() : Option.some(position + chunk.length)] as const
    ))

/**
 * Replaces the content of `file` from byte `from` on with `bytes`: what lies before `from` is not
 * written at all. Uninterruptible, so a timeout cannot stop it between writing and truncating.
 */
export const replaceFrom = (file: OpenFile, input: string, from: number, bytes: Uint8Array): Effect.Effect<void, ToolError> =>
  attempt(input, async () => {
    let written = 0
    while (written < bytes.length) {
      const { bytesWritten } = await file.handle.write(bytes, written, bytes.length - written, from + written)
      written += bytesWritten
    }
    await file.handle.truncate(from + bytes.length)
  }).pipe(Effect.uninterruptible)
