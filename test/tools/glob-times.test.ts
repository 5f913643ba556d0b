/**
 * How `glob` reads the times of many matches: batches go to threads (`statThreads.ts`), which read
 * files by their plain paths and then check that each directory is still the one the walk opened;
 * a directory swapped for a link meanwhile has its files read through its descriptor instead, so
 * the link's target never lends its files' times.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { glob } from "effect-agent-loop"
import { offerStatTimes } from "../../src/tools/statThreads.ts"
import * as os from "node:os"
import { text, withWorkspace, write } from "../support/toolWorkspace.ts"

/**
 * Offers the batch until a thread takes it (they start on the first offer). A thread's start can
 * take long on a loaded machine: the wait is for the condition, with a generous bound.
 */
const readByThread = async (batch: Parameters<typeof offerStatTimes>[0]) => {
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    const reading = offerStatTimes(batch)
    if (reading !== undefined) return reading
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error("no thread took the batch within 60 s")
}

describe("glob's times, read by threads", () => {
  it.effect("many matches (more than a batch): newest first, capped, as the times say", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        for (let i = 0; i < 1_500; i++) {
          const file = `d${i % 30}/f${i}.ts`
          write(root, file, "")
          // distinct times, not in walk order
          const seconds = 1_000_000 + ((i * 7919) % 1_500)
          nodeFs.utimesSync(nodePath.join(root, file), seconds, seconds)
        }
        const expected = Array.from({ length: 1_500 }, (_, i) => ({ file: `d${i % 30}/f${i}.ts`, at: (i * 7919) % 1_500 }))
          .sort((a, b) => b.at - a.at).slice(0, 100).map((entry) => entry.file)
        const shown = (yield* text(glob, { pattern: "**/*.ts" })).split("\n")
        expect(shown.slice(0, 100)).toEqual(expected)
        expect(shown[100]).toContain("of 1500 files")
      })
    ))

  it.skipIf(!nodeFs.existsSync("/proc/self/fd"))("a directory swapped for a link after the walk opened it: its files' times are its own, not the link target's", async () => {
    const root = nodeFs.mkdtempSync(nodePath.join(os.tmpdir(), "glob-times-"))
    const inside = nodePath.join(root, "inside")
    const outside = nodePath.join(root, "outside")
    nodeFs.mkdirSync(inside)
    nodeFs.mkdirSync(outside)
    nodeFs.writeFileSync(nodePath.join(inside, "f"), "")
    nodeFs.writeFileSync(nodePath.join(outside, "f"), "")
    nodeFs.utimesSync(nodePath.join(inside, "f"), 1_000, 1_000)
    nodeFs.utimesSync(nodePath.join(outside, "f"), 2_000, 2_000)
    const fd = nodeFs.openSync(inside, nodeFs.constants.O_RDONLY | nodeFs.constants.O_DIRECTORY)
    try {
      const via = `/proc/self/fd/${fd}`
      const opened = nodeFs.statSync(via)
      const batch = { dirs: [{ plain: inside, via, dev: opened.dev, ino: opened.ino }], dirOf: new Int32Array([0]), names: ["f"] }
      expect([...(await readByThread(batch))!]).toEqual([1_000_000])
      // the walk's directory moves away and a link to another takes its name
      nodeFs.renameSync(inside, nodePath.join(root, "moved"))
      nodeFs.symlinkSync(outside, inside)
      expect([...(await readByThread(batch))!]).toEqual([1_000_000])
    } finally {
      nodeFs.closeSync(fd)
      nodeFs.rmSync(root, { recursive: true, force: true })
    }
  })
})
