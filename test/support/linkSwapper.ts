/**
 * A thread that flips a directory `d` between a real directory and a symbolic link to outside, as
 * fast as it can, for the races between checking a path and opening it by name. It runs in a
 * worker thread (so the test's own reads and writes race it for real) and stops with the scope.
 */
import { Effect } from "effect"
import { Worker } from "node:worker_threads"

const SWAPPER = `
const { workerData } = require("node:worker_threads")
const fs = require("node:fs")
const { d, parkedDir, parkedLink, stop, flips, removeStray } = workerData
const attempt = (f) => { try { f(); return true } catch { return false } }
while (Atomics.load(stop, 0) === 0) {
  attempt(() => fs.renameSync(d, parkedDir))
  if (attempt(() => fs.renameSync(parkedLink, d))) Atomics.add(flips, 0, 1)
  attempt(() => fs.renameSync(d, parkedLink))
  if (!attempt(() => fs.renameSync(parkedDir, d)) && removeStray) {
    attempt(() => fs.rmSync(d, { recursive: true, force: true }))
    attempt(() => fs.renameSync(parkedDir, d))
  }
}
`

/** Where the swapper works: `d` itself, and the names its directory and its link are parked under. */
export interface SwapPaths {
  readonly d: string
  readonly parkedDir: string
  /** Must already be a link to outside when the swapper starts. */
  readonly parkedLink: string
  /**
   * Whether a stray `d` that something created while `d` was briefly missing is removed so the
   * directory can come back (it is inside anyway): for tests whose tools create files under `d`.
   */
  readonly removeStray?: boolean
}

/** A running swapper: how many times the link was swapped in, and how to stop it early. */
export interface LinkSwapper {
  readonly worker: Worker
  readonly flips: () => number
  readonly stop: () => void
}

/** Starts the swapper; the worker is terminated when the scope closes. */
export const linkSwapper = (paths: SwapPaths) => {
  const stop = new Int32Array(new SharedArrayBuffer(4))
  const flips = new Int32Array(new SharedArrayBuffer(4))
  return Effect.acquireRelease(
    Effect.sync(() =>
      new Worker(SWAPPER, {
        eval: true,
        workerData: { ...paths, removeStray: paths.removeStray === true, stop, flips }
      })
    ),
    (worker) => Effect.promise(() => worker.terminate())
  ).pipe(Effect.map((worker): LinkSwapper => ({
    worker,
    flips: () => Atomics.load(flips, 0),
    stop: () => Atomics.store(stop, 0, 1)
  })))
}
