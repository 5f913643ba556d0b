/**
 * Plan mode (`TurnOptions.planMode`): the model is offered only read-only tools and
 * `exit_plan_mode`; the plan goes to the reviewer, whose answer decides: accepted, the same turn
 * goes on with every tool; refined, the words go back to the model; with no reviewer, the plan is
 * the turn's answer and the turn ends there. Without plan mode, `exit_plan_mode` is not offered.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { AgentLoop, builtinTools, makeExitPlanMode, type PlanDecision, type PlanRequest, WorkspaceLive } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ofKind } from "../support/fixtures.ts"

const PLAN = "1. Add `hello.txt`\n2. Check it"

const layerWith = (workspace: string, script: Testing.TestLoopOptions["script"], decisions?: Array<PlanDecision>, seen?: Array<PlanRequest>) =>
  Testing.layer({
    tools: [
      ...builtinTools({ enable: ["read_file", "write_file", "exec"] }),
      makeExitPlanMode(decisions === undefined ? undefined : (request) =>
        Effect.sync(() => {
          seen?.push(request)
          return decisions.shift()!
        }))
    ],
    script
  }).pipe(Layer.provide(WorkspaceLive.layer(workspace)), Layer.provide(NodeServices.layer))

const offered = (requests: ReadonlyArray<{ readonly tools: ReadonlyArray<{ readonly name: string }> }>) =>
  requests.map((request) => request.tools.map((tool) => tool.name).toSorted())

const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "plan-mode-"))

describe("plan mode", () => {
  it.effect("offers read-only tools and exit_plan_mode; a refined plan goes back, an accepted one goes on with every tool", () => {
    const dir = tempDir()
    const seen: Array<PlanRequest> = []
    const script = [
      { toolCalls: [{ id: "p1", name: "exit_plan_mode", arguments: { plan: "too vague" } }] },
      { toolCalls: [{ id: "p2", name: "exit_plan_mode", arguments: { plan: PLAN } }] },
      { toolCalls: [{ id: "w1", name: "write_file", arguments: { path: "hello.txt", content: "hi\n" } }] },
      { content: "done" }
    ]
    return Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const result = yield* (yield* AgentLoop).turn("s", "add hello.txt", { planMode: true })
      expect(result.status).toBe("completed")
      expect(result.finalMessage?.content).toBe("done")
      const requests = yield* Testing.requests
      expect(offered(requests)).toEqual([
        ["exec_output", "exit_plan_mode", "read_file"],
        ["exec_output", "exit_plan_mode", "read_file"],
        // accepted: every tool but exit_plan_mode
        ["exec", "exec_kill", "exec_output", "read_file", "write_file"],
        ["exec", "exec_kill", "exec_output", "read_file", "write_file"]
      ])
      expect(seen.map((request) => request.plan)).toEqual(["too vague", PLAN])
      expect(seen[1]).toMatchObject({ sessionKey: "s", toolCallId: "p2" })
      const ends = ofKind(yield* events, "ToolExecEnd")
      expect(ends[0]!.result).toContain("keep planning: name the files")
      expect(ends[1]!.result).toContain("The user approved the plan")
      expect(fs.readFileSync(path.join(dir, "hello.txt"), "utf8")).toBe("hi\n")
    }).pipe(Effect.provide(layerWith(dir, script, [{ _tag: "Refine", feedback: "name the files" }, { _tag: "Accept", mode: "acceptEdits" }], seen)))
  })

  it.effect("refuses a tool that is not offered while planning", () => {
    const dir = tempDir()
    const script = [
      { toolCalls: [{ id: "w1", name: "write_file", arguments: { path: "x.txt", content: "x" } }] },
      { content: "ok" }
    ]
    return Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "go", { planMode: true })
      expect(result.status).toBe("completed")
      expect(fs.existsSync(path.join(dir, "x.txt"))).toBe(false)
    }).pipe(Effect.provide(layerWith(dir, script, [])))
  })

  it.effect("with no reviewer, the plan is the turn's answer and the turn ends there", () => {
    const dir = tempDir()
    const script = [
      { toolCalls: [{ id: "p1", name: "exit_plan_mode", arguments: { plan: PLAN } }] },
      { content: "never asked for" }
    ]
    return Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "plan it", { planMode: true })
      expect(result.status).toBe("completed")
      expect(result.finalMessage?.content).toBe(PLAN)
      expect(yield* Testing.requests).toHaveLength(1)
    }).pipe(Effect.provide(layerWith(dir, script)))
  })

  it.effect("without plan mode, exit_plan_mode is not offered", () => {
    const dir = tempDir()
    return Effect.gen(function*() {
      yield* (yield* AgentLoop).turn("s", "hi")
      expect(offered(yield* Testing.requests)).toEqual([["exec", "exec_kill", "exec_output", "read_file", "write_file"]])
    }).pipe(Effect.provide(layerWith(dir, [{ content: "hello" }])))
  })
})
