/**
 * The walk of `grep` and `glob`: a workspace directory's files, depth first, each directory's
 * entries in name order, as fast as the file system answers — synchronous calls, a few files at a
 * time, so the caller keeps the event loop turning between batches.
 *
 * What it passes by: symbolic links (never followed, to files or directories), FIFOs, sockets and
 * devices; `.git` and `node_modules` directories; what the workspace's `.gitignore` files ignore
 * (`gitignore.ts`); what the host's path rules deny (silently) or ask about (marked, so the caller
 * can count them in order); files the caller's filter refuses. Hidden files are walked.
 *
 * Confinement is `confined.ts`'s: each directory is opened relative to its parent's descriptor
 * with `O_NOFOLLOW` (on Linux through `/proc/self/fd/N`), so a directory swapped for a link during
 * the walk is refused, never followed; a file is later opened relative to its directory's
 * descriptor, which a `File` item holds (counted) until the caller releases it.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { type IgnoreFile, isIgnored, parseIgnoreFile } from "./gitignore.ts"
import { SKIPPED_DIRECTORIES } from "./listDir.ts"
import { walkRule } from "./pathRules.ts"
import type { WorkspaceShape } from "./workspace.ts"

/** Whether directories can be reached through their descriptors (`/proc/self/fd/N/name`). */
export const DESCRIPTOR_PATHS = fs.existsSync("/proc/self/fd")

/** The largest `.gitignore` read; a larger one is not used. */
const MAX_IGNORE_FILE_BYTES = 1024 * 1024

const DIRECTORY_FLAGS = fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW
const FILE_FLAGS = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK

/** A directory held open during a walk. */
export interface DirHandle {
  /** The descriptor, when this walk opened it (and so closes it); `undefined` for one the caller owns or without `/proc`. */
  fd: number | undefined
  /** How its children are reached: `/proc/self/fd/N` on Linux, else its absolute path. */
  readonly via: string
  readonly absolute: string
  /** Relative to the workspace root, `/`-separated; `""` for the root. */
  readonly relative: string
  /** The walk's own hold and the items that hold it; closed at 0. */
  refs: number
}

/** What a walk yields, in walk order: a file, or the mark of an entry a path rule asks about. */
export type WalkItem =
  | { readonly _tag: "File"; readonly dir: DirHandle; readonly name: string; readonly relative: string }
  | { readonly _tag: "Asked" }

/** Where and what to walk. */
export interface WalkOptions {
  readonly workspace: WorkspaceShape
  /** The tool the path rules are asked about (`grep`, `glob`). */
  readonly tool: string
  /** The directory the walk starts in: held open by the caller (`confined.openDirectory`). */
  readonly start: { readonly via: string; readonly absolute: string }
  /** The path the approver saw, for the path rules' "already answered" ask (default: `start`). */
  readonly ruleStart?: string | undefined
  /** The `.gitignore` files of the start's ancestors inside the workspace, root first (`ancestorIgnoreFiles`). */
  readonly ignore: ReadonlyArray<IgnoreFile>
  /** Which files to yield, by their path from the root and their name (default: all). */
  readonly include?: ((relative: string, name: string) => boolean) | undefined
}

interface Frame {
  readonly dir: DirHandle
  readonly entries: ReadonlyArray<fs.Dirent>
  readonly chain: ReadonlyArray<IgnoreFile>
  index: number
}

const byName = (a: fs.Dirent, b: fs.Dirent) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

/** The bytes of a regular file `name` in `via`, not through a link; `undefined` when that cannot be. */
const readSmallFile = (via: string, name: string, maxBytes: number): Buffer | undefined => {
  let fd: number | undefined
  try {
    fd = fs.openSync(nodePath.join(via, name), FILE_FLAGS)
    const info = fs.fstatSync(fd)
    if (!info.isFile() || info.size > maxBytes) return undefined
    const buffer = Buffer.allocUnsafe(info.size)
    let filled = 0
    while (filled < info.size) {
      const read = fs.readSync(fd, buffer, filled, info.size - filled, filled)
      if (read === 0) break
      filled += read
    }
    return buffer.subarray(0, filled)
  } catch {
    return undefined
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
  }
}

/** The `.gitignore` of a directory reached by `via`, whose path from the root is `relative`. */
export const readIgnoreFile = (via: string, relative: string): IgnoreFile | undefined => {
  const bytes = readSmallFile(via, ".gitignore", MAX_IGNORE_FILE_BYTES)
  return bytes === undefined ? undefined : parseIgnoreFile(relative, bytes.toString("utf8"))
}

/**
 * The `.gitignore` files of the directories from the root down to `relative`'s parent (root
 * first), each opened as the walk opens directories. A directory that cannot be opened stops the
 * chain there.
 */
export const ancestorIgnoreFiles = (root: string, relative: string): ReadonlyArray<IgnoreFile> => {
  const names = relative === "" ? [] : relative.split("/")
  const files: Array<IgnoreFile> = []
  const opened: Array<number> = []
  try {
    let via = root
    if (DESCRIPTOR_PATHS) {
      const fd = fs.openSync(root, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY)
      opened.push(fd)
      via = `/proc/self/fd/${fd}`
    }
    let here = ""
    for (let i = 0; i < names.length; i++) {
      const file = readIgnoreFile(via, here)
      if (file !== undefined) files.push(file)
      const name = names[i]!
      if (DESCRIPTOR_PATHS) {
        const fd = fs.openSync(nodePath.join(via, name), DIRECTORY_FLAGS)
        opened.push(fd)
        via = `/proc/self/fd/${fd}`
      } else {
        via = nodePath.join(via, name)
        if (!fs.lstatSync(via).isDirectory()) break
      }
      here = here === "" ? name : `${here}/${name}`
    }
  } catch {
    // a directory on the way that cannot be opened: the rules found so far
  } finally {
    for (const fd of opened) fs.closeSync(fd)
  }
  return files
}

/** Releases one hold on `dir`, closing it with the last. */
export const release = (dir: DirHandle): void => {
  dir.refs--
  if (dir.refs === 0 && dir.fd !== undefined) {
    const fd = dir.fd
    dir.fd = undefined
    fs.closeSync(fd)
  }
}

/** A walk in progress: `next` gives the following items, `close` lets go of every open directory. */
export interface Walker {
  /** Up to `maxFiles` more files (with the ask marks met on the way), or `undefined` when the walk is over. */
  readonly next: (maxFiles: number) => ReadonlyArray<WalkItem> | undefined
  /** Closes the directories still open, whatever still holds them. */
  readonly close: () => void
}

/** Starts a walk (see the module doc). */
export const walk = (options: WalkOptions): Walker => {
  const { workspace, tool, include } = options
  const ruleOf = walkRule(workspace, tool, options.ruleStart ?? options.start.absolute)
  const open = new Set<DirHandle>()
  const startRelative = workspace.display(options.start.absolute)
  const stack: Array<Frame> = []

  const enter = (dir: DirHandle, chain: ReadonlyArray<IgnoreFile>) => {
    let entries: Array<fs.Dirent>
    try {
      entries = fs.readdirSync(dir.via, { withFileTypes: true })
    } catch {
      entries = []
    }
    entries.sort(byName)
    const own = entries.some((entry) => entry.name === ".gitignore" && entry.isFile())
      ? readIgnoreFile(dir.via, dir.relative)
      : undefined
    stack.push({ dir, entries, chain: own === undefined ? chain : [...chain, own], index: 0 })
  }

  const openChild = (parent: DirHandle, name: string, relative: string): DirHandle | undefined => {
    const absolute = `${parent.absolute}/${name}`
    try {
      if (DESCRIPTOR_PATHS) {
        const fd = fs.openSync(`${parent.via}/${name}`, DIRECTORY_FLAGS)
        const dir: DirHandle = { fd, via: `/proc/self/fd/${fd}`, absolute, relative, refs: 1 }
        open.add(dir)
        return dir
      }
      if (!fs.lstatSync(absolute).isDirectory()) return undefined
      return { fd: undefined, via: absolute, absolute, relative, refs: 1 }
    } catch {
      return undefined
    }
  }

  enter(
    { fd: undefined, via: options.start.via, absolute: options.start.absolute, relative: startRelative === "." ? "" : startRelative, refs: 1 },
    options.ignore
  )

  return {
    next: (maxFiles) => {
      if (stack.length === 0) return undefined
      const items: Array<WalkItem> = []
      let files = 0
      while (stack.length > 0 && files < maxFiles) {
        const frame = stack[stack.length - 1]!
        if (frame.index >= frame.entries.length) {
          stack.pop()
          release(frame.dir)
          if (frame.dir.fd === undefined) open.delete(frame.dir)
          continue
        }
        const entry = frame.entries[frame.index++]!
        const isDirectory = entry.isDirectory()
        if (!isDirectory && !entry.isFile()) continue
        const name = entry.name
        const relative = frame.dir.relative === "" ? name : `${frame.dir.relative}/${name}`
        if (isDirectory && SKIPPED_DIRECTORIES.has(name)) continue
        if (isIgnored(frame.chain, relative, name, isDirectory)) continue
        if (!isDirectory && include !== undefined && !include(relative, name)) continue
        if (workspace.pathRule !== undefined) {
          const rule = ruleOf(`${frame.dir.absolute}/${name}`)
          if (rule !== undefined) {
            if (rule._tag === "Ask") items.push({ _tag: "Asked" })
            continue
          }
        }
        if (isDirectory) {
          const child = openChild(frame.dir, name, relative)
          if (child !== undefined) enter(child, frame.chain)
        } else {
          frame.dir.refs++
          items.push({ _tag: "File", dir: frame.dir, name, relative })
          files++
        }
      }
      return items
    },
    // only once nothing can still open a file through these descriptors (the workers have stopped)
    close: () => {
      stack.length = 0
      for (const dir of open) {
        if (dir.fd !== undefined) {
          const fd = dir.fd
          dir.fd = undefined
          fs.closeSync(fd)
        }
      }
      open.clear()
    }
  }
}

/**
 * Opens the directory `relative` (from the root, below `start`, whose path from the root is
 * `startRelative`) as a walk does, component by component from `start` without following a link,
 * reusing what `cache` holds; `undefined` when it cannot be. For files named by another walker
 * (ripgrep's answers) after the walk closed their directories.
 */
export const openWalkedDirectory = (
  start: { readonly via: string; readonly absolute: string },
  startRelative: string,
  relative: string,
  cache: Map<string, DirHandle>
): DirHandle | undefined => {
  const known = cache.get(relative)
  if (known !== undefined) return known
  let dir: DirHandle
  if (relative === startRelative) {
    dir = { fd: undefined, via: start.via, absolute: start.absolute, relative, refs: 1 }
  } else {
    if (startRelative !== "" && !relative.startsWith(`${startRelative}/`)) return undefined
    const cut = relative.lastIndexOf("/")
    const parent = openWalkedDirectory(start, startRelative, cut === -1 ? "" : relative.slice(0, cut), cache)
    if (parent === undefined) return undefined
    const name = cut === -1 ? relative : relative.slice(cut + 1)
    const absolute = `${parent.absolute}/${name}`
    try {
      if (DESCRIPTOR_PATHS) {
        const fd = fs.openSync(`${parent.via}/${name}`, DIRECTORY_FLAGS)
        dir = { fd, via: `/proc/self/fd/${fd}`, absolute, relative, refs: 1 }
      } else {
        if (!fs.lstatSync(absolute).isDirectory()) return undefined
        dir = { fd: undefined, via: absolute, absolute, relative, refs: 1 }
      }
    } catch {
      return undefined
    }
  }
  cache.set(relative, dir)
  return dir
}

/** Closes what `openWalkedDirectory` opened into `cache`. */
export const closeWalkedDirectories = (cache: Map<string, DirHandle>): void => {
  for (const dir of cache.values()) {
    if (dir.fd !== undefined) {
      const fd = dir.fd
      dir.fd = undefined
      fs.closeSync(fd)
    }
  }
  cache.clear()
}
