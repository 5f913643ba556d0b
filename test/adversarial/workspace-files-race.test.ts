/**
 * A directory swapped for a link to outside while the loop reads a workspace file (a settings
 * file, a context file): resolving the path and then opening it by name leaves a window in which
 * the open follows the new link. The check is made again on the opened descriptor, so not one
 * read may return what lies outside.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { Worker } from "node:worker_threads"
import { readConfined, textOf } from "../../src/layers/readConfined.ts"
import { tempDir } from "../support/toolWorkspace.ts"

const ROUNDS = 3000

/** Flips `d` between a real directory and a link to outside, as fast as it can, until told to stop. */
const SWAPPER = `
const { workerData } = require("node:worker_threads")
const fs = require("node:fs")
const { d, parkedDir, parkedLink, stop, flips } = workerData
const attempt = (f) => { try { f(); return true } catch { return false } }
while (Atomics.load(stop, 0) === 0) {
  attempt(() => fs.renameSync(d, parkedDir))
  if (attempt(() => fs.renameSync(parkedLink, d))) Atomics.add(flips, 0, 1)
  attempt(() => fs.renameSync(d, parkedLink))
  attempt(() => fs.renameSync(parkedDir, d))
}
`

describe("a directory swapped for a link during a read", () => {
  it.live(`${ROUNDS} reads racing a directory/link swap: none returns the file outside`, () =>
    Effect.gen(function*() {
      const root = yield* tempDir("ws-read-race-")
      const outside = yield* tempDir("outside-")
      const d = nodePath.join(root, ".agent-loop")
      nodeFs.mkdirSync(d)
      nodeFs.writeFileSync(nodePath.join(d, "settings.json"), "inside")
      nodeFs.writeFileSync(nodePath.join(outside, "settings.json"), "OUTSIDE SECRET")
      nodeFs.symlinkSync(outside, nodePath.join(root, "parked.link"))
      const stop = new Int32Array(new SharedArrayBuffer(4))
      const flips = new Int32Array(new SharedArrayBuffer(4))
      yield* Effect.acquireRelease(
        Effect.sync(() =>
          new Worker(SWAPPER, {
            eval: true,
            workerData: { d, parkedDir: nodePath.join(root, "parked.dir"), parkedLink: nodePath.join(root, "parked.link"), stop, flips }
          })
        ),
        (worker) => Effect.promise(() => worker.terminate())
      )
      const outcomes = { inside: 0, escaped: 0, other: 0 }
      for (let i = 0; i < ROUNDS; i++) {
        const read = yield* readConfined(nodePath.join(d, "settings.json"), { within: root, maxBytes: 1024, warn: false })
        const text = textOf(read)
        if (text === "inside") outcomes.inside++
        else if (text !== undefined && text.includes("OUTSIDE")) outcomes.escaped++
        else outcomes.other++
      }
      Atomics.store(stop, 0, 1)
      console.log(`read race: ${Atomics.load(flips, 0)} swaps; ${JSON.stringify(outcomes)}`)
      expect(Atomics.load(flips, 0)).toBeGreaterThan(0)
      expect(outcomes.escaped).toBe(0)
    }).pipe(Effect.scoped), 60_000)
})
