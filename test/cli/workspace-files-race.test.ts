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
import { readConfined, textOf } from "../../src/layers/internal/readConfined.ts"
import { linkSwapper } from "../support/linkSwapper.ts"
import { tempDir } from "../support/toolWorkspace.ts"

const ROUNDS = 3000

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
      const swapper = yield* linkSwapper({ d, parkedDir: nodePath.join(root, "parked.dir"), parkedLink: nodePath.join(root, "parked.link") })
      const outcomes = { inside: 0, escaped: 0, other: 0 }
      for (let i = 0; i < ROUNDS; i++) {
        const read = yield* readConfined(nodePath.join(d, "settings.json"), { within: root, maxBytes: 1024, warn: false })
        const text = textOf(read)
        if (text === "inside") outcomes.inside++
        else if (text !== undefined && text.includes("OUTSIDE")) outcomes.escaped++
        else outcomes.other++
      }
      swapper.stop()
      console.log(`read race: ${swapper.flips()} swaps; ${JSON.stringify(outcomes)}`)
      expect(swapper.flips()).toBeGreaterThan(0)
      expect(outcomes.escaped).toBe(0)
    }).pipe(Effect.scoped), 60_000)
})
