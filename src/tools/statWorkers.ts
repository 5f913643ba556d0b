/**
 * Modification times of many files at once, for `glob`'s newest-first order: a walk can match tens
 * of thousands of files, and one `lstat` after another on the main thread would take longer than
 * the walk. Threads take batches of paths (reached through their directory's descriptor, as the
 * walk opened it) and answer with the times, `NaN` for what is not a regular file any more.
 */
import { Worker } from "node:worker_threads"

/** The threads' program: plain JavaScript, so it runs the same from source and from a build. */
const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads")
const fs = require("node:fs")
parentPort.on("message", ({ id, paths }) => {
  const times = new Float64Array(paths.length)
  for (let i = 0; i < paths.length; i++) {
    const info = fs.lstatSync(paths[i], { throwIfNoEntry: false })
    times[i] = info !== undefined && info.isFile() ? info.mtimeMs : NaN
  }
  parentPort.postMessage({ id, times }, [times.buffer])
})
`

/** The name of the threads (Linux shows it as the thread's name). */
export const STAT_THREAD_NAME = "glob-stat"

/** Threads answering modification times. */
export interface StatPool {
  /** The modification times of `paths` (`NaN`: not a regular file). */
  readonly mtimes: (paths: ReadonlyArray<string>) => Promise<Float64Array>
  /** Terminates the threads; pending answers fail. */
  readonly close: () => Promise<void>
}

/** `size` threads, started with the first batch. */
export const makeStatPool = (size: number): StatPool => {
  const threads: Array<{ readonly worker: Worker; readonly pending: Map<number, { resolve: (times: Float64Array) => void; reject: (error: Error) => void }> }> = []
  let nextId = 0
  let turn = 0
  const start = () => {
    const worker = new Worker(WORKER_SOURCE, { eval: true, name: STAT_THREAD_NAME })
    worker.unref()
    const thread = { worker, pending: new Map<number, { resolve: (times: Float64Array) => void; reject: (error: Error) => void }>() }
    const failAll = (error: Error) => {
      for (const waiting of thread.pending.values()) waiting.reject(error)
      thread.pending.clear()
    }
    worker.on("message", ({ id, times }: { readonly id: number; readonly times: Float64Array }) => {
      thread.pending.get(id)?.resolve(times)
      thread.pending.delete(id)
    })
    worker.on("error", failAll)
    worker.on("exit", () => failAll(new Error("the stat thread stopped")))
    threads.push(thread)
  }
  return {
    mtimes: (paths) =>
      new Promise((resolve, reject) => {
        if (threads.length < size) start()
        const thread = threads[turn++ % threads.length]!
        const id = nextId++
        thread.pending.set(id, { resolve, reject })
        thread.worker.postMessage({ id, paths })
      }),
    close: async () => {
      await Promise.all(threads.splice(0).map((thread) => thread.worker.terminate()))
    }
  }
}
