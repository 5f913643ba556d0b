/**
 * Reading a file on the workspace's behalf: context files, settings, hook manifests, `.mcp.json`,
 * `@path` mentions, and the files the user names on the command line.
 *
 * A repository the user merely opens decides what these names point to, so a name is not trusted
 * to stay where it sits: `AGENTS.md -> ../.ssh/id_ed25519` would otherwise put a key into the
 * system prompt. `readConfined` reads a file only when it lies inside `within` once every link is
 * resolved, and checks that on the descriptor it reads from (`/proc/self/fd/N` names the file that
 * was really opened), so a directory swapped for a link between the check and the open is caught.
 * A file that leaves is skipped with one warning line naming it. With `ownedByUser` a file, or the
 * directory holding it, that belongs to another user (root excepted) is skipped the same way, as
 * git's `safe.directory` does for a repository planted in a shared directory.
 *
 * Every read is bounded by `maxBytes` whatever `stat` says: `/proc/self/pagemap` reports size 0
 * and reads forever. Only regular files are opened, non-blocking, so a FIFO never hangs a start.
 *
 * Without `/proc/self/fd` (macOS, the BSDs) the resolved path is opened without following a link
 * and compared by device and inode with what was checked; a directory swapped in between is not
 * noticed there.
 */
import * as Effect from "effect/Effect"
import { constants, existsSync, type Stats } from "node:fs"
import * as fsp from "node:fs/promises"
import * as nodePath from "node:path"
import { isWithin } from "../../domain/paths.ts"

const DESCRIPTOR_PATHS = existsSync("/proc/self/fd")

/** How a file is to be read. */
export interface ReadOptions {
  /** The most bytes read; more is reported as `truncated`. */
  readonly maxBytes: number
  /** The directory the file must stay inside, links resolved; absent for a file the user named. */
  readonly within?: string
  /** Skip a file, or a directory holding it, owned by another user than the current one or root. */
  readonly ownedByUser?: boolean
  /** Log the warning for a skipped file (default); a caller that fails with its own line turns it off. */
  readonly warn?: boolean
}

/** What became of a read. */
export type ReadResult =
  | {
    readonly _tag: "Read"
    readonly bytes: Uint8Array
    /** More than `maxBytes` was there. */
    readonly truncated: boolean
    /** The size `stat` gave on the descriptor: not to be trusted (a `/proc` file says 0), for messages only. */
    readonly size: number
    /** The real path of the file read. */
    readonly real: string
  }
  | { readonly _tag: "Missing" }
  | { readonly _tag: "NotRegular" }
  /** Left out for the reason given; a warning naming the file was logged (unless `warn` is off). */
  | { readonly _tag: "Skipped"; readonly reason: string }
  | { readonly _tag: "Failed"; readonly message: string }

const errnoOf = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error ? String(error.code) : undefined

const messageOf = (error: unknown): string => error instanceof Error ? error.message : String(error)

const currentUid = typeof process.getuid === "function" ? process.getuid() : undefined

/** Under `sudo`, the user who ran it: their files are theirs, as git's `safe.directory` also allows. */
const sudoUid = currentUid === 0 && /^\d+$/.test(process.env["SUDO_UID"] ?? "") ? Number(process.env["SUDO_UID"]) : undefined

/** Whether `info` belongs to the current user or root (always true where there are no uids). */
const ownedByUs = (info: Stats): boolean =>
  currentUid === undefined || info.uid === currentUid || info.uid === 0 || info.uid === sudoUid

/** The real path of the file open as `handle`, from the descriptor itself. */
const openedPath = (handle: fsp.FileHandle, fallback: string): Promise<string> =>
  DESCRIPTOR_PATHS ? fsp.readlink(`/proc/self/fd/${handle.fd}`) : Promise.resolve(fallback)

const CHUNK_BYTES = 64 * 1024

/**
 * Reads from `handle` until end of file or until more than `limit` bytes are in, in whole chunks
 * (some kernel files accept only reads of a multiple of 8 bytes); never trusts a size.
 */
const readHead = async (handle: fsp.FileHandle, limit: number): Promise<Uint8Array> => {
  const chunks: Array<Uint8Array> = []
  let total = 0
  while (total <= limit) {
    const chunk = new Uint8Array(CHUNK_BYTES)
    const { bytesRead } = await handle.read(chunk, 0, CHUNK_BYTES, null)
    if (bytesRead === 0) break
    chunks.push(chunk.subarray(0, bytesRead))
    total += bytesRead
  }
  return Buffer.concat(chunks, total)
}

const attempt = async (path: string, options: ReadOptions): Promise<ReadResult> => {
  const absolute = nodePath.resolve(path)
  let root: string | undefined
  if (options.within !== undefined) {
    try {
      root = await fsp.realpath(options.within)
    } catch (error) {
      return errnoOf(error) === "ENOENT" ? { _tag: "Missing" } : { _tag: "Failed", message: messageOf(error) }
    }
  }
  let real: string
  try {
    real = await fsp.realpath(absolute)
  } catch (error) {
    const code = errnoOf(error)
    return code === "ENOENT" || code === "ENOTDIR" ? { _tag: "Missing" } : { _tag: "Failed", message: messageOf(error) }
  }
  // decided before anything is opened: opening a device can have effects of its own
  if (root !== undefined && !isWithin(root, real)) return { _tag: "Skipped", reason: `it leads outside ${root} (to ${real})` }
  const before = await fsp.stat(real).catch(() => undefined)
  if (before === undefined) return { _tag: "Missing" }
  if (!before.isFile()) return { _tag: "NotRegular" }
  let handle: fsp.FileHandle
  try {
    handle = await fsp.open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY)
  } catch (error) {
    const code = errnoOf(error)
    if (code === "ELOOP") return { _tag: "Skipped", reason: "it was replaced by a symbolic link while being opened" }
    return code === "ENOENT" ? { _tag: "Missing" } : { _tag: "Failed", message: messageOf(error) }
  }
  try {
    const info = await handle.stat()
    if (!info.isFile()) return { _tag: "NotRegular" }
    const opened = await openedPath(handle, real)
    if (root !== undefined && !isWithin(root, opened)) return { _tag: "Skipped", reason: `it leads outside ${root} (to ${opened})` }
    if (!DESCRIPTOR_PATHS && (info.dev !== before.dev || info.ino !== before.ino)) {
      return { _tag: "Skipped", reason: "it changed while being opened" }
    }
    if (options.ownedByUser === true) {
      const directory = await fsp.stat(nodePath.dirname(opened))
      if (!ownedByUs(info)) return { _tag: "Skipped", reason: `it is owned by another user (uid ${info.uid})` }
      if (!ownedByUs(directory)) {
        return { _tag: "Skipped", reason: `its directory ${nodePath.dirname(opened)} is owned by another user (uid ${directory.uid})` }
      }
    }
    const head = await readHead(handle, options.maxBytes)
    const truncated = head.length > options.maxBytes
    const bytes = truncated ? head.subarray(0, options.maxBytes) : head
    return { _tag: "Read", bytes, truncated, size: info.size, real: opened }
  } catch (error) {
    return { _tag: "Failed", message: messageOf(error) }
  } finally {
    await handle.close().catch(() => undefined)
  }
}

/**
 * Reads the file at `path` as the module doc says. Never fails: what went wrong is in the result,
 * and a file skipped for leaving `within` or for its owner has been named in one warning line.
 */
export const readConfined = (path: string, options: ReadOptions): Effect.Effect<ReadResult> =>
  Effect.tap(Effect.promise(() => attempt(path, options)), (result) =>
    result._tag === "Skipped" && options.warn !== false ? Effect.logWarning(`skipped ${path}: ${result.reason}`) : Effect.void)

/** The text of a read, cut characters (at the cut) dropped; `undefined` when nothing was read. */
export const textOf = (result: ReadResult): string | undefined => {
  if (result._tag !== "Read") return undefined
  // streaming holds back a character cut in half at the end instead of turning it into U+FFFD
  return new TextDecoder().decode(result.bytes, { stream: result.truncated })
}

/** One line saying why a file the user named could not be read, or `undefined` when it was. */
export const problemOf = (result: ReadResult, maxBytes: number): string | undefined => {
  switch (result._tag) {
    case "Read":
      return result.truncated ? `larger than the limit of ${maxBytes} bytes` : undefined
    case "Missing":
      return "no such file"
    case "NotRegular":
      return "not a regular file"
    case "Skipped":
      return result.reason
    case "Failed":
      return result.message
  }
}
