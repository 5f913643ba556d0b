/**
 * `todo_write`: the model's todo list, published as a typed `TodoUpdated` event with the whole
 * list each time, kept in the session's log as the call, and drawn on a terminal as a checklist.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { AgentLoop, builtinTools, SessionStore, WorkspaceLive } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { Effect, Layer } from "effect"
import * as os from "node:os"
import { makeRenderer } from "../../src/cli/output/render.ts"
import * as Screen from "../../src/cli/terminal/screen.ts"
import { ofKind } from "../support/fixtures.ts"

const todos = [
  { content: "Read the failing test", status: "completed" },
  { content: "Fix the parser", status: "in_progress", activeForm: "Fixing the parser" },
  { content: "Run the tests", status: "pending" }
] as const

const loop = Testing.layer({
  tools: builtinTools({ enable: ["todo_write"] }),
  script: [
    { toolCalls: [{ id: "t1", name: "todo_write", arguments: { todos } }] },
    { toolCalls: [{ id: "t2", name: "todo_write", arguments: { todos: [{ content: "x", status: "doing" }] } }] },
    { content: "done" }
  ]
}).pipe(Layer.provide(WorkspaceLive.layer(os.tmpdir())), Layer.provide(NodeServices.layer))

describe("todo_write", () => {
  it.effect("publishes the whole list as TodoUpdated, answers with the counts, refuses a bad status, and stays in the log", () =>
    Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "go")
      expect(result.status).toBe("completed")
      const all = yield* events
      const updated = ofKind(all, "TodoUpdated")
      expect(updated).toHaveLength(1)
      expect(updated[0]).toMatchObject({ toolCallId: "t1", todos, sessionKey: "s", depth: 0 })
      const ends = ofKind(all, "ToolExecEnd")
      expect(ends[0]).toMatchObject({ toolName: "todo_write", isError: false, result: "Todo list updated (1 done, 1 in progress, 1 pending)." })
      // a status it does not know is the model's error to fix: no event
      expect(ends[1]!.isError).toBe(true)
      const log = yield* (yield* SessionStore).log("s")
      expect(JSON.stringify(log)).toContain("Fixing the parser")
    }).pipe(Effect.provide(loop)))

  it("is drawn as a checklist: done dimmed, the one in progress in its active form", () => {
    let written = ""
    const screen = Screen.make({ stdout: { write: () => true }, stderr: { write: (t: string) => (written += t), isTTY: false }, stdinIsTTY: false, env: {} })
    const draw = makeRenderer(screen, { verbose: false })
    Effect.runSync(draw({ _tag: "TodoUpdated", turnId: "t", sessionKey: "s", iteration: 1, depth: 0, at: 0, toolCallId: "t1", todos } as never))
    expect(written).toBe("  ☑ Read the failing test\n  ◐ Fixing the parser\n  ☐ Run the tests\n")
  })
})
