/**
 * `grep` over a directory: the walk (`walk.ts`) gives the files in order, the search threads
 * (`searchWorkers.ts`) read and match them, and the results are taken in walk order until the cap
 * on matches. Two ways to find the files worth reading:
 *
 * - with ripgrep (`ripgrep.ts`), when it is installed and the pattern translates
 *   (`grepPattern.ts`): the walk's files go to ripgrep in batches (two at a time, growing, so a
 *   broad pattern stops early), and only the files it names are read by the threads;
 * - built in: every file of the walk goes to the threads, which pass by those without the
 *   pattern's required text before decoding anything.
 *
 * Both give the same answer: the same walk, the same code reading the same files, and ripgrep's
 * pattern matching wherever JavaScript's does (more is only slower). Should ripgrep refuse the
 * search, it runs again built in.
 */
import { type RipgrepRun, ripgrepMatching, RipgrepUnusable } from "./ripgrep.ts"
import type { FileResult, SearchPool } from "./searchWorkers.ts"
import { ancestorIgnoreFiles, closeWalkedDirectories, type DirHandle, openWalkedDirectory, release, walk, type WalkItem } from "./walk.ts"
import type { WorkspaceShape } from "./workspace.ts"

/** A search of a directory. */
export interface TreeSearch {
  readonly workspace: WorkspaceShape
  /** The directory, held open by the caller (`confined.openDirectory`). */
  readonly start: { readonly via: string; readonly absolute: string }
  /** Which files to search, by their path from the root and their name. */
  readonly include: ((relative: string, name: string) => boolean) | undefined
  readonly pool: SearchPool
  readonly maxMatches: number
  /** ripgrep and the pattern to give it, when it is to be used. */
  readonly ripgrep: { readonly path: string; readonly pattern: string; readonly maxFileBytes: number } | undefined
}

/** What a search found, in walk order. */
export interface SearchOutcome {
  /** `file:line: text`, at most `maxMatches`. */
  readonly matches: ReadonlyArray<string>
  /** More matches were found than `maxMatches`. */
  readonly capped: boolean
  /** Binary files the pattern matches in (before the cap). */
  readonly binary: number
  /** Files and directories passed by because a path rule asks about them (before the cap). */
  readonly asked: number
  /** Which way the files to read were found. */
  readonly engine: "ripgrep" | "builtin"
}

/** A search running: its outcome, and how to stop it. */
export interface RunningSearch {
  readonly outcome: Promise<SearchOutcome>
  /** Stops everything it started (ripgrep, threads) and closes its directories. */
  readonly abort: () => Promise<void>
}

/** Files per batch for the threads: enough to keep them busy, few enough to stop soon after the cap. */
const THREAD_BATCH = 48
/**
 * ripgrep batches grow to this many files: the first ones are small, so a broad pattern is
 * answered soon; later ones smaller again when the candidates found so far say few more are needed.
 */
const RG_BATCHES = [64, 256, 1024, 4096, 8192] as const
/** ripgrep's argument list stays under this many bytes (Linux allows 2 MiB in all). */
const RG_ARGUMENT_BYTES = 1024 * 1024
/** ripgrep runs at once. */
const RG_PARALLEL = 2

type FileItem = Extract<WalkItem, { readonly _tag: "File" }>

class Stopped extends Error {}

/** Starts the search of `search.start` (see the module doc). */
export const searchTree = (search: TreeSearch): RunningSearch => {
  const { workspace, pool, maxMatches } = search
  const startRelative = workspace.display(search.start.absolute)
  const base = startRelative === "." ? "" : startRelative
  const ignore = ancestorIgnoreFiles(workspace.root, base)
  const walkers: Array<ReturnType<typeof walk>> = []
  const running = new Set<RipgrepRun>()
  const reopened = new Map<string, DirHandle>()
  let stopped = false

  const newWalker = () => {
    const walker = walk({ workspace, tool: "grep", start: search.start, ignore, include: search.include })
    walkers.push(walker)
    return walker
  }

  /** Takes one batch's results in order; `true` once the cap is passed. */
  const take = (outcome: { matches: Array<string>; capped: boolean; binary: number; asked: number }) =>
  (items: ReadonlyArray<WalkItem>, results: ReadonlyArray<FileResult | undefined>): boolean => {
    let r = 0
    for (const item of items) {
      if (item._tag === "Asked") {
        outcome.asked++
        continue
      }
      const result = results[r++]
      if (result === undefined) continue
      if (result._tag === "Binary") outcome.binary++
      else if (result._tag === "Text") {
        for (const [index, line] of result.found) {
          if (outcome.matches.length >= maxMatches) {
            outcome.capped = true
            return true
          }
          outcome.matches.push(`${item.relative}:${index + 1}: ${line}`)
        }
      }
    }
    return false
  }

  const examine = (files: ReadonlyArray<FileItem>, dirOf: (file: FileItem) => DirHandle | undefined) => {
    const requests = []
    const names = []
    const positions: Array<number> = []
    for (let i = 0; i < files.length; i++) {
      const dir = dirOf(files[i]!)
      if (dir === undefined) continue
      requests.push({ path: `${dir.via}/${files[i]!.name}`, direct: false })
      names.push(files[i]!.relative)
      positions.push(i)
    }
    const spread = (results: ReadonlyArray<FileResult>) => {
      const all: Array<FileResult | undefined> = new Array(files.length).fill(undefined)
      positions.forEach((position, k) => (all[position] = results[k]))
      return all
    }
    const results = requests.length === 0 ? Promise.resolve(spread([])) : pool.examine(requests, names, maxMatches + 1).then(spread)
    // batches read ahead may never be waited for (the cap, a stop): their failures are nobody's
    results.catch(() => undefined)
    return results
  }

  const checkStopped = () => {
    if (stopped) throw new Stopped()
  }

  const builtin = async (): Promise<SearchOutcome> => {
    const outcome = { matches: [] as Array<string>, capped: false, binary: 0, asked: 0 }
    const keep = take(outcome)
    const walker = newWalker()
    const inflight: Array<{ readonly items: ReadonlyArray<WalkItem>; readonly results: Promise<ReadonlyArray<FileResult | undefined>> }> = []
    let walked = false
    const fill = () => {
      while (!walked && inflight.length < 6) {
        const items = walker.next(THREAD_BATCH)
        if (items === undefined) {
          walked = true
          break
        }
        const files = items.filter((item): item is FileItem => item._tag === "File")
        const results = examine(files, (file) => file.dir)
        // the directories stay open until the thread has opened the files through them
        void results.then(() => files.forEach((file) => release(file.dir)), () => undefined)
        inflight.push({ items, results })
      }
    }
    fill()
    while (inflight.length > 0) {
      const batch = inflight.shift()!
      const results = await batch.results
      checkStopped()
      fill()
      if (keep(batch.items, results)) break
    }
    return { ...outcome, engine: "builtin" }
  }

  const withRipgrep = async (rg: NonNullable<TreeSearch["ripgrep"]>): Promise<SearchOutcome> => {
    const outcome = { matches: [] as Array<string>, capped: false, binary: 0, asked: 0 }
    const keep = take(outcome)
    const walker = newWalker()
    const inflight: Array<{ readonly items: ReadonlyArray<WalkItem>; readonly files: number; readonly run: RipgrepRun | undefined }> = []
    let walked = false
    let batches = 0
    // what ripgrep's answers so far say of the files still to come, so a search that has enough
    // candidates for the cap starts no more runs (they would only take the processors from reading)
    let answeredFiles = 0
    let candidates = 0
    let unread = 0
    const enough = () => {
      if (answeredFiles === 0) return false
      const expected = unread + inflight.reduce((sum, batch) => sum + batch.files, 0) * (candidates / answeredFiles)
      return expected > maxMatches - outcome.matches.length
    }
    /** `planned`, or fewer files when the candidates found so far say that many would fill the cap. */
    const batchSize = (planned: number) => {
      if (answeredFiles === 0 || candidates === 0) return planned
      const expected = unread + inflight.reduce((sum, batch) => sum + batch.files, 0) * (candidates / answeredFiles)
      const missing = maxMatches + 1 - outcome.matches.length - expected
      return Math.min(planned, Math.max(RG_BATCHES[1], Math.ceil((1.5 * missing * answeredFiles) / candidates)))
    }
    const fill = () => {
      while (!walked && inflight.length < RG_PARALLEL && !enough()) {
        const size = batchSize(RG_BATCHES[Math.min(batches++, RG_BATCHES.length - 1)]!)
        const items: Array<WalkItem> = []
        const files: Array<string> = []
        let bytes = 0
        while (files.length < size && bytes < RG_ARGUMENT_BYTES) {
          const next = walker.next(Math.min(64, size - files.length))
          if (next === undefined) {
            walked = true
            break
          }
          for (const item of next) {
            items.push(item)
            if (item._tag !== "File") continue
            // ripgrep opens the files by name; the threads reopen them through their directories
            release(item.dir)
            files.push(item.relative)
            bytes += Buffer.byteLength(item.relative) + 1
          }
        }
        if (items.length === 0) break
        const run = files.length === 0 ? undefined : ripgrepMatching(rg.path, workspace.root, rg.pattern, rg.maxFileBytes, files)
        if (run !== undefined) {
          running.add(run)
          void run.matching.then(() => running.delete(run), () => running.delete(run))
        }
        inflight.push({ items, files: files.length, run })
      }
    }
    const dirOf = (file: FileItem) => {
      const cut = file.relative.lastIndexOf("/")
      return openWalkedDirectory(search.start, base, cut === -1 ? "" : file.relative.slice(0, cut), reopened)
    }
    fill()
    while (inflight.length > 0) {
      const batch = inflight.shift()!
      const matching = batch.run === undefined ? new Set<string>() : await batch.run.matching
      checkStopped()
      answeredFiles += batch.files
      candidates += matching.size
      unread += matching.size
      fill()
      // the files ripgrep named, and the ask marks, in walk order
      const kept = batch.items.filter((item) => item._tag === "Asked" || matching.has(item.relative))
      const chunks: Array<{ readonly items: ReadonlyArray<WalkItem>; readonly results: Promise<ReadonlyArray<FileResult | undefined>> }> = []
      let from = 0
      const dispatch = () => {
        for (; chunks.length < 4 && from < kept.length; from += THREAD_BATCH) {
          const items = kept.slice(from, from + THREAD_BATCH)
          chunks.push({ items, results: examine(items.filter((item): item is FileItem => item._tag === "File"), dirOf) })
        }
      }
      dispatch()
      while (chunks.length > 0) {
        const chunk = chunks.shift()!
        const results = await chunk.results
        checkStopped()
        dispatch()
        unread -= results.length
        if (keep(chunk.items, results)) return { ...outcome, engine: "ripgrep" }
      }
      // fewer matches than expected: more runs
      fill()
    }
    return { ...outcome, engine: "ripgrep" }
  }

  const killAll = () => {
    for (const run of running) run.kill()
    running.clear()
  }

  // a thread takes tens of milliseconds to start: it starts while the walk and ripgrep do
  pool.warm()
  const outcome = (async () => {
    if (search.ripgrep === undefined) return builtin()
    try {
      return await withRipgrep(search.ripgrep)
    } catch (error) {
      if (!(error instanceof RipgrepUnusable)) throw error
      killAll()
      return builtin()
    } finally {
      killAll()
    }
  })()
  // a caller that stopped waiting is not told of what failed after
  outcome.catch(() => undefined)

  return {
    outcome,
    abort: async () => {
      stopped = true
      killAll()
      await pool.close()
      for (const walker of walkers) walker.close()
      closeWalkedDirectories(reopened)
    }
  }
}
