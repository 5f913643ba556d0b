/**
 * A directory swapped for a symbolic link to outside the workspace while the file tools work:
 * checking the path and then opening it by name leaves a window in which the open follows the new
 * link. Writes, edits and reads race a swapper thread here; not one may land outside.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { editFile, Message, readFile, writeFile } from "effect-agent-loop"
import { linkSwapper } from "../support/linkSwapper.ts"
import { call, withWorkspace } from "../support/toolWorkspace.ts"

const ROUNDS = 400

describe("symlink swap race", () => {
  it.live(`${ROUNDS} writes, edits and reads racing a directory/link swap: zero escapes`, () =>
    withWorkspace(({ root, outside }) =>
      Effect.gen(function*() {
        const d = nodePath.join(root, "d")
        nodeFs.mkdirSync(d)
        nodeFs.writeFileSync(nodePath.join(d, "secret.txt"), "inside\n")
        nodeFs.writeFileSync(nodePath.join(outside, "secret.txt"), "OUTSIDE SECRET\n")
        for (let i = 0; i < ROUNDS; i++) {
          nodeFs.writeFileSync(nodePath.join(d, `e-${i}.txt`), "AAA\n")
          nodeFs.writeFileSync(nodePath.join(outside, `e-${i}.txt`), "AAA\n")
        }
        nodeFs.symlinkSync(outside, nodePath.join(root, "d.link"))
        const swapper = yield* linkSwapper({ d, parkedDir: nodePath.join(root, "d.dir"), parkedLink: nodePath.join(root, "d.link"), removeStray: true })
        expect(swapper.worker.threadId).toBeGreaterThan(0)

        let done = 0
        let readEscapes = 0
        for (let i = 0; i < ROUNDS; i++) {
          const written = yield* Effect.exit(call(writeFile, { path: `d/f-${i}.txt`, content: "x" }))
          const edited = yield* Effect.exit(call(editFile, { path: `d/e-${i}.txt`, old_text: "AAA", new_text: "BBB" }))
          const read = yield* Effect.exit(call(readFile, { path: "d/secret.txt" }))
          if (read._tag === "Success" && Message.textOf(read.value.content).includes("OUTSIDE")) readEscapes++
          done += [written, edited, read].filter((exit) => exit._tag === "Success").length
        }
        swapper.stop()

        const writeEscapes = nodeFs.readdirSync(outside).filter((name) => name.startsWith("f-")).length
        const editEscapes = nodeFs.readdirSync(outside).filter((name) =>
          name.startsWith("e-") && nodeFs.readFileSync(nodePath.join(outside, name), "utf8") !== "AAA\n"
        ).length
        console.log(
          `symlink race: ${swapper.flips()} swaps, ${done} of ${3 * ROUNDS} calls succeeded; ` +
            `escapes: ${writeEscapes} writes, ${editEscapes} edits, ${readEscapes} reads`
        )
        // the race really ran: the link was swapped in many times and calls both worked and were refused
        expect(swapper.flips()).toBeGreaterThan(10)
        expect(done).toBeGreaterThan(0)
        expect(done).toBeLessThan(3 * ROUNDS)
        expect({ writeEscapes, editEscapes, readEscapes }).toEqual({ writeEscapes: 0, editEscapes: 0, readEscapes: 0 })
      })
    ), 120_000)
})
