/**
 * `glob`: the workspace's files whose path matches a glob pattern, most recently modified first
 * (Claude Code's `Glob`), capped so a broad pattern cannot flood the context window. It walks as
 * `grep` does (`walk.ts`): `.gitignore` respected, `.git` and `node_modules` skipped, hidden files
 * included, symbolic links never followed, what the path rules deny left out.
 *
 * @example
 * ```ts
 * import { makeGlob, ToolRegistryLive } from "effect-agent-loop"
 * const tools = ToolRegistryLive.layer([makeGlob({ maxResults: 50 })])
 * ```
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { ToolError } from "../domain/errors.ts"
import * as Tool from "../domain/Tool.ts"
import { kindOfPath, openDirectory } from "./confined.ts"
import { isIgnored } from "./gitignore.ts"
import { fileMatcher } from "./globMatch.ts"
import { SKIPPED_DIRECTORIES } from "./listDir.ts"
import { guardPathRules, walkRule } from "./pathRules.ts"
import { offerStatTimes, type StatBatch, type StatDirectory } from "./statThreads.ts"
import { ancestorIgnoreFiles, type DirHandle, release, walk, type WalkItem } from "./walk.ts"
import { DEFAULT_FILE_TOOL_TIMEOUT, scopeOf, shownIn, Workspace } from "./workspace.ts"

/** Limits of `glob`. */
export interface GlobOptions {
  /** Most paths in one result. Default 100. */
  readonly maxResults?: number
  /** How long one call may take. Default 30 seconds. */
  readonly timeout?: Duration.Input
}

/** The default cap on paths of one `glob` result. */
export const DEFAULT_GLOB_MAX_RESULTS = 100

/** The arguments of `glob`. */
export const GlobParameters = Schema.Struct({
  pattern: Schema.String.annotate({
    description: "Glob pattern for the files to find, e.g. \"**/*.ts\" or \"src/**/*.test.ts\", relative to path; " +
      "a pattern without a `/` matches file names at any depth, e.g. \"*.md\" (\"/*.md\": only right in path)"
  }),
  path: Schema.optionalKey(
    Schema.String.annotate({ description: "Directory to search in, relative to the workspace root (default \".\")" })
  )
})

/** Files found per step of the walk, between which the event loop turns. */
const STEP = 2048

/** Matches whose times one thread reads at a time (`statThreads.ts`); fewer in all are read here. */
const BATCH = 512

const NO_THROW = { throwIfNoEntry: false } as const

type WalkFile = Extract<WalkItem, { readonly _tag: "File" }>

const pathOf = (file: WalkFile) => `${file.dir.via}/${file.name}`

/** What each directory was when the walk opened it, read once through its descriptor. */
const identities = new WeakMap<DirHandle, StatDirectory>()

const identityOf = (dir: DirHandle): StatDirectory => {
  let known = identities.get(dir)
  if (known === undefined) {
    // without a descriptor (`via` is the plain path) there is nothing to check against; the walk's
    // own descriptor is read with fstat, which resolves no path
    const info = dir.via === dir.absolute
      ? undefined
      : dir.fd !== undefined
      ? fs.fstatSync(dir.fd)
      : fs.statSync(dir.via, NO_THROW)
    known = info === undefined
      ? { plain: dir.via, via: dir.via, dev: 0, ino: 0 }
      : { plain: dir.absolute, via: dir.via, dev: info.dev, ino: info.ino }
    identities.set(dir, known)
  }
  return known
}

/** A batch of files for the threads (`statThreads.ts`): their names and their directories once each. */
const batchOf = (files: ReadonlyArray<WalkFile>): StatBatch => {
  const dirs: Array<StatDirectory> = []
  const index = new Map<DirHandle, number>()
  const dirOf = new Int32Array(files.length)
  const names: Array<string> = []
  for (let i = 0; i < files.length; i++) {
    const dir = files[i]!.dir
    let at = index.get(dir)
    if (at === undefined) {
      at = dirs.push(identityOf(dir)) - 1
      index.set(dir, at)
    }
    dirOf[i] = at
    names.push(files[i]!.name)
  }
  return { dirs, dirOf, names }
}

/** A file's modification time, `NaN` when it is not a regular file (any more). */
const lstatTime = (file: WalkFile): number => {
  const info = fs.lstatSync(pathOf(file), NO_THROW)
  return info !== undefined && info.isFile() ? info.mtimeMs : NaN
}

const GLOB_SYNTAX = /[*?[\]{}\\]/

/**
 * The indices of the `count` newest times (`NaN`s left out), newest first, the lower index first
 * among equal times (the walk's order), and how many times there were: one pass, keeping only the
 * `count` best sorted, rather than sorting every match for the few shown.
 */
const newest = (times: ReadonlyArray<number>, count: number) => {
  const top: Array<number> = []
  let files = 0
  for (let index = 0; index < times.length; index++) {
    const time = times[index]!
    if (Number.isNaN(time)) continue
    files++
    if (top.length === count && (count === 0 || time <= times[top[count - 1]!]!)) continue
    // after the last kept one at least as new: a later index loses ties
    let low = 0
    let high = top.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if (times[top[middle]!]! >= time) low = middle + 1
      else high = middle
    }
    top.splice(low, 0, index)
    if (top.length > count) top.pop()
  }
  return { files, top }
}

/** `glob` with the given limits. */
export const makeGlob = (options: GlobOptions = {}) => {
  const maxResults = options.maxResults ?? DEFAULT_GLOB_MAX_RESULTS
  return Tool.make({
    name: "glob",
    description: "Finds files in the workspace by a glob pattern (`*` and `?` within a name, `**` for any number of " +
      "directories, `{a,b}`, `[abc]`) and returns their paths relative to the workspace root, most recently modified " +
      `first. A pattern with a \`/\` is matched against the path below \`path\`, one without against file names at any ` +
      `depth. Skips what .gitignore files ignore, ${[...SKIPPED_DIRECTORIES].join(" and ")} and symbolic links; ` +
      `includes hidden files. Returns at most ${maxResults} paths.`,
    parameters: GlobParameters,
    readOnly: true,
    idempotent: true,
    timeout: options.timeout ?? DEFAULT_FILE_TOOL_TIMEOUT,
    execute: ({ pattern: written, path: input = "." }) =>
      Effect.scoped(Effect.gen(function*() {
        const workspace = yield* Workspace
        const absolute = yield* workspace.resolve(input)
        yield* guardPathRules(workspace, "glob", input, absolute)
        // a search in an added directory runs there, its files shown by their absolute paths
        const { prefix, workspace: scoped } = scopeOf(workspace, absolute)
        if ((yield* kindOfPath(scoped.root, absolute, input)) !== "directory") {
          return yield* Effect.fail(new ToolError({ message: `"${input}" is not a directory; glob searches a directory's files` }))
        }
        // an absolute pattern inside the workspace is one from the root; `/x` and `./x` are anchored to `path`
        const fromRoot = written.startsWith(`${scoped.root}/`)
        const anchored = !fromRoot && /^\.?\//.test(written)
        const pattern = (fromRoot ? written.slice(scoped.root.length + 1) : written).replace(/^(\.?\/)+/, "")
        if (pattern === "") return yield* Effect.fail(new ToolError({ message: "The pattern is empty; give one such as \"**/*.ts\"" }))
        const matches = fileMatcher(pattern, anchored)
        const byPath = pattern.includes("/")
        const searched = fromRoot ? "." : scoped.display(absolute)
        const base = searched === "." ? "" : searched
        const below = (relative: string) => (base === "" ? relative : relative.slice(base.length + 1))

        // the pattern's leading plain directories ("src/lib/**/*.ts"): walked into directly, when
        // the walk from `path` would enter them
        const segments = byPath ? pattern.split("/") : []
        const plain: Array<string> = []
        for (const segment of segments.slice(0, -1)) {
          if (segment === "" || segment === "." || segment === ".." || GLOB_SYNTAX.test(segment)) break
          plain.push(segment)
        }
        const ruleOf = walkRule(scoped, "glob", absolute)
        let startRelative = base
        for (const name of plain) {
          const relative = startRelative === "" ? name : `${startRelative}/${name}`
          const chain = ancestorIgnoreFiles(scoped.root, relative)
          if (
            SKIPPED_DIRECTORIES.has(name) || isIgnored(chain, relative, name, true) ||
            ruleOf(nodePath.join(scoped.root, relative)) !== undefined
          ) break
          startRelative = relative
        }
        const startAbsolute = nodePath.join(scoped.root, startRelative)
        const startKind = startAbsolute === absolute
          ? "directory"
          : yield* kindOfPath(scoped.root, startAbsolute, input).pipe(Effect.orElseSucceed(() => "missing" as const))

        // the walk's matches, in walk order, and their times once read (NaN: not a file after all)
        const found: Array<string> = []
        const times: Array<number> = []
        let asked = 0
        if (startKind === "directory") {
          const start = yield* openDirectory(scoped.root, startAbsolute, input)
          const walker = yield* Effect.acquireRelease(
            Effect.sync(() =>
              walk({
                workspace: scoped,
                tool: "glob",
                start,
                ruleStart: absolute,
                ignore: ancestorIgnoreFiles(scoped.root, startRelative),
                include: (relative, name) => matches(below(relative), name)
              })
            ),
            (walker) => Effect.sync(() => walker.close())
          )
          // batches of matches whose times are still to read: handed to the threads as they have room
          // (`statThreads.ts`), and once the walk is over, read here too while they finish theirs
          const queue: Array<{ readonly files: ReadonlyArray<WalkFile>; readonly offset: number }> = []
          const running: Array<Promise<void>> = []
          let waiting: Array<WalkFile> = []
          const settle = (files: ReadonlyArray<WalkFile>, offset: number, read: Float64Array | undefined) => {
            for (let i = 0; i < files.length; i++) {
              times[offset + i] = read === undefined ? lstatTime(files[i]!) : read[i]!
              release(files[i]!.dir)
            }
          }
          const offer = () => {
            while (queue.length > 0) {
              const batch = queue[0]!
              const reading = offerStatTimes(batchOf(batch.files))
              if (reading === undefined) return
              queue.shift()
              running.push(reading.then((read) => {
                settle(batch.files, batch.offset, read)
                offer()
              }))
            }
          }
          while (true) {
            const items = walker.next(STEP)
            if (items === undefined) break
            for (const item of items) {
              if (item._tag === "Asked") {
                asked++
                continue
              }
              found.push(item.relative)
              waiting.push(item)
              if (waiting.length >= BATCH) {
                queue.push({ files: waiting, offset: found.length - waiting.length })
                waiting = []
                offer()
              }
            }
            yield* Effect.yieldNow
          }
          // fewer matches in all than a batch are read here: no thread is worth starting for them
          if (found.length < BATCH) settle(waiting, 0, undefined)
          else if (waiting.length > 0) queue.push({ files: waiting, offset: found.length - waiting.length })
          // the threads take the queue's first batches, this thread its last, until none is left
          while (queue.length > 0) {
            offer()
            const batch = queue.pop()
            if (batch !== undefined) settle(batch.files, batch.offset, undefined)
            yield* Effect.yieldNow
          }
          yield* Effect.promise(() => Promise.all(running))
        }

        const { files, top } = newest(times, maxResults)
        const lines = top.map((index) => shownIn(prefix, found[index]!))
        if (files > maxResults) {
          lines.push(
            `[showing the ${maxResults} most recently modified of ${files} files; narrow the pattern or path to see the rest]`
          )
        }
        if (asked > 0) {
          lines.push(`[${asked} file(s) or directories the permission rules ask about were left out; name them in path to be asked]`)
        }
        if (files === 0) lines.unshift(`No files match "${written}" in "${input}"`)
        return lines.join("\n")
      }))
  })
}

/** `glob` with default limits. */
export const glob = makeGlob()
