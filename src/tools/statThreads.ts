/**
 * The threads that read files' modification times for `glob`: its newest-first answer needs the
 * time of every match, and one `lstat` per match on the walking thread cost more than the whole
 * walk (24,300 matches: about 200 ms, the walk about 100 ms). Batches of matches go to two threads
 * while the walk goes on, so the walk and the `lstat`s share the cores.
 *
 * The threads are the process's, started by the first call that needs them (their start overlaps
 * that call's walk) and stopped after a few idle seconds; they never keep the process alive. Each
 * path is a directory descriptor's (`/proc/self/fd/N/name`, `walk.ts`), which threads of one process
 * share, or its plain path checked against that directory (`WORKER_SOURCE`), and is read with
 * `lstat`: a link is never followed. A thread that fails leaves its
 * batches to the caller (`undefined`), which then reads them itself.
 */
import { Worker } from "node:worker_threads"

/**
 * The threads' program: plain JavaScript, so it runs the same from source and from a build. A
 * batch's files are read by their plain paths (about half the cost of a descriptor's path), then
 * each of their directories is checked to be still the one the walk opened (same device and inode
 * at its plain path, not a link): the files of one that is not are read again through its
 * descriptor, so a directory swapped for a link meanwhile never lends its files' times.
 */
const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads")
const fs = require("node:fs")
const NO_THROW = { throwIfNoEntry: false }
const time = (path) => {
  let info
  try {
    info = fs.lstatSync(path, NO_THROW)
  } catch {
    info = undefined
  }
  return info !== undefined && info.isFile() ? info.mtimeMs : NaN
}
parentPort.on("message", ({ id, names, dirOf, dirs }) => {
  const times = new Float64Array(names.length)
  for (let i = 0; i < names.length; i++) times[i] = time(dirs[dirOf[i]].plain + "/" + names[i])
  const moved = dirs.map((dir) => {
    if (dir.plain === dir.via) return false
    let info
    try {
      info = fs.lstatSync(dir.plain, NO_THROW)
    } catch {
      info = undefined
    }
    return info === undefined || !info.isDirectory() || info.dev !== dir.dev || info.ino !== dir.ino
  })
  for (let i = 0; i < names.length; i++) if (moved[dirOf[i]]) times[i] = time(dirs[dirOf[i]].via + "/" + names[i])
  parentPort.postMessage({ id, times }, [times.buffer])
})
`

/** A directory of a batch: its plain path, its descriptor's path, and what it was when the walk opened it. */
export interface StatDirectory {
  readonly plain: string
  readonly via: string
  readonly dev: number
  readonly ino: number
}

/** Files to read the times of: each a name in one of `dirs` (`dirOf[i]` its index). */
export interface StatBatch {
  readonly dirs: ReadonlyArray<StatDirectory>
  readonly dirOf: Int32Array
  readonly names: ReadonlyArray<string>
}

/** How many threads read times. */
const THREADS = 2

/** Batches one thread holds at a time: one it reads, one waiting, so it never waits on the caller. */
const DEPTH = 2

/** Idle time after which the threads stop. */
const IDLE_MS = 5_000

interface Thread {
  readonly worker: Worker
  online: boolean
  readonly pending: Map<number, (times: Float64Array | undefined) => void>
}

const threads: Array<Thread> = []
let nextId = 0
let idleTimer: ReturnType<typeof setTimeout> | undefined

const stop = (thread: Thread) => {
  const index = threads.indexOf(thread)
  if (index !== -1) threads.splice(index, 1)
  for (const resolve of thread.pending.values()) resolve(undefined)
  thread.pending.clear()
}

const start = (): Thread => {
  const worker = new Worker(WORKER_SOURCE, { eval: true, name: "agent-loop glob times" })
  // it must never be what keeps the process alive
  worker.unref()
  const thread: Thread = { worker, online: false, pending: new Map() }
  worker.on("online", () => {
    thread.online = true
  })
  worker.on("message", ({ id, times }: { readonly id: number; readonly times: Float64Array }) => {
    const resolve = thread.pending.get(id)
    thread.pending.delete(id)
    if (threads.every((t) => t.pending.size === 0)) scheduleIdleStop()
    resolve?.(times)
  })
  worker.on("error", () => stop(thread))
  worker.on("exit", () => stop(thread))
  threads.push(thread)
  return thread
}

const scheduleIdleStop = () => {
  if (idleTimer !== undefined) clearTimeout(idleTimer)
  idleTimer = setTimeout(() => {
    idleTimer = undefined
    if (threads.some((thread) => thread.pending.size > 0)) return
    for (const thread of threads.splice(0)) void thread.worker.terminate()
  }, IDLE_MS)
  idleTimer.unref()
}

/** Starts the threads now, if they are not running, so that they are ready when the first batch is. */
export const warmStatThreads = (): void => {
  if (idleTimer !== undefined) {
    clearTimeout(idleTimer)
    idleTimer = undefined
  }
  while (threads.length < THREADS) start()
}

/**
 * The modification times (ms) of the batch's files, `NaN` for one that is not a regular file (or
 * is gone), read by a thread that is running and has room; `undefined` when none has (the caller
 * reads them itself, or offers them again later). The promise gives `undefined` when the thread failed.
 */
export const offerStatTimes = (batch: StatBatch): Promise<Float64Array | undefined> | undefined => {
  warmStatThreads()
  let best: Thread | undefined
  for (const thread of threads) {
    if (thread.online && thread.pending.size < DEPTH && (best === undefined || thread.pending.size < best.pending.size)) {
      best = thread
    }
  }
  if (best === undefined) return undefined
  const thread = best
  const id = nextId++
  return new Promise((resolve) => {
    thread.pending.set(id, resolve)
    thread.worker.postMessage({ id, ...batch })
  })
}
