/**
 * Checkpoints (`TurnOptions.checkpoint`), on the scripted model and TestClock: a turn saves what it
 * completed after each step; a turn cut short (here by a hard abort, which stores nothing, as a
 * crash does) resumes from its last checkpoint with the same id, iterations and usage; a call that
 * was running is run again only when its tool is idempotent, otherwise the model is told it was
 * interrupted by a crash; completed calls never run again; the checkpoint is bounded by
 * `maxResponseBytes`, tested at the bound.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Schema } from "effect"
import {
  AgentLoop,
  Checkpoint,
  type CheckpointStale,
  ContextLengthExceeded,
  Message,
  type ProviderTypes,
  type Scripted,
  SecretsLive,
  SessionStore,
  Tool
} from "effect-agent-loop"
import { sizeOf } from "../../src/domain/Checkpoint.ts"
import * as Testing from "effect-agent-loop/testing"
import { longHistory } from "../support/fixtures.ts"

const usage = { inputTokens: 10, outputTokens: 5 }

/** What each tool did, by name: one entry per execution. */
const runs = (): Record<string, Array<string>> => ({})

const counted = (log: Record<string, Array<string>>, name: string, arg: string) => (log[name] ??= []).push(arg)

/** The tools of these tests, counting their executions in `log`. */
const toolsFor = (log: Record<string, Array<string>>) => [
  // not idempotent: it changes something
  Tool.make({
    name: "record",
    description: "records a note",
    parameters: Schema.Struct({ note: Schema.String }),
    execute: ({ note }) => Effect.sync(() => (counted(log, "record", note), `recorded ${note}`))
  }),
  // not idempotent, and never ends on its own: the call in flight when the turn is cut short
  Tool.make({
    name: "deploy",
    description: "deploys",
    parameters: Schema.Struct({}),
    execute: () => Effect.andThen(Effect.sync(() => counted(log, "deploy", "")), Effect.as(Effect.sleep("1 hour"), "deployed"))
  }),
  // idempotent: `slow` waits an hour the first time it runs, answers at once after
  Tool.make({
    name: "look",
    description: "looks something up",
    parameters: Schema.Struct({ what: Schema.String }),
    readOnly: true,
    idempotent: true,
    execute: ({ what }) =>
      Effect.suspend(() => {
        counted(log, "look", what)
        const first = log["look"]!.filter((w) => w === what).length === 1
        return what === "slow" && first ? Effect.as(Effect.sleep("1 hour"), "late") : Effect.succeed(`found ${what}`)
      })
  })
]

/**
 * The model: the user's input names the tool calls of its first reply (`a,b` calls `record` with
 * note a, then b; `deploy`; `look:x`), each tool result is answered by the next call the input
 * lists after `;`, and a reply with every call answered ends with `done`, quoting the last result.
 */
const script = (request: ProviderTypes.ProviderRequest): Scripted.ScriptedResponse => {
  const user = request.messages.filter((m) => m.role === "user").at(-1)!
  const steps = Message.textOf(user.content).split(";")
  const replies = request.messages.filter((m) => m.role === "assistant").length
  const step = steps[replies]
  if (step === undefined) {
    const last = request.messages.at(-1)!
    return { content: `done: ${Message.textOf(last.content)}`, usage }
  }
  return {
    toolCalls: step.split(",").map((call) => {
      const [name, arg] = call.split(":")
      return name === "deploy" ? { name } : name === "look" ? { name, arguments: { what: arg } } : { name: "record", arguments: { note: name } }
    }),
    usage
  }
}

const saver = () => {
  const saved: Array<Checkpoint.Checkpoint> = []
  return { saved, save: (checkpoint: Checkpoint.Checkpoint) => Effect.sync(() => void saved.push(checkpoint)) }
}

const progress = (checkpoint: Checkpoint.Checkpoint | undefined): Checkpoint.TurnCheckpoint => {
  if (checkpoint?._tag !== "TurnCheckpoint") throw new Error(`expected a checkpoint, got ${JSON.stringify(checkpoint)}`)
  return checkpoint
}

const stored = (sessionKey: string) =>
  Effect.gen(function*() {
    return yield* (yield* SessionStore).load(sessionKey)
  })

/**
 * A checkpointed turn of `input` on session "s", run until `ready` holds, then, after `meanwhile`,
 * cut short as a crash would cut it (a hard abort stores nothing); its result.
 */
const cutShort = <E = never, R = never>(
  input: string,
  save: Checkpoint.Checkpointing["save"],
  ready: () => boolean,
  meanwhile: Effect.Effect<void, E, R> = Effect.void
) =>
  Effect.gen(function*() {
    const loop = yield* AgentLoop
    const first = yield* Effect.forkChild(loop.turn("s", input, { checkpoint: { save } }))
    yield* Testing.settled(Effect.sync(ready))
    yield* meanwhile
    yield* loop.interruptHard("s")
    return yield* Fiber.join(first)
  })

describe("checkpoints", () => {
  it.effect("a turn saves its progress after each reply that asks for tools, before a mutating call, after each result", () => {
    const log = runs()
    return Effect.gen(function*() {
      const { saved, save } = saver()
      const loop = yield* AgentLoop
      const result = yield* loop.turn("s", "a;look:x", { checkpoint: { save } })
      expect(result.status).toBe("completed")
      const steps = saved.map(progress).map((c) => ({
        iteration: c.iteration,
        produced: c.produced.length,
        results: c.results.map((r) => Message.textOf(r.content)),
        started: c.started.length
      }))
      expect(steps).toEqual([
        { iteration: 1, produced: 2, results: [], started: 0 }, // the reply asking for `record`
        { iteration: 1, produced: 2, results: [], started: 1 }, // `record` is about to run
        { iteration: 1, produced: 2, results: ["recorded a"], started: 1 }, // its result
        { iteration: 2, produced: 4, results: [], started: 0 }, // the reply asking for `look` (idempotent: no save before it)
        { iteration: 2, produced: 4, results: ["found x"], started: 1 } // its result
        // the final answer is not saved: the commit follows it
      ])
      const last = progress(saved.at(-1))
      expect(last.turnId).toBe(result.turnId)
      expect(last.usage).toEqual({ inputTokens: 20, outputTokens: 10 })
      expect(last.produced).toEqual(result.messages.slice(0, 4))
      expect(yield* stored("s")).toEqual(result.messages)
    }).pipe(Effect.provide(Testing.layer({ script, tools: toolsFor(log) })))
  })

  it.effect("resumes after a crash: completed calls are not run again, the non-idempotent call in flight is reported interrupted", () => {
    const log = runs()
    return Effect.gen(function*() {
      const { saved, save } = saver()
      const events = yield* Testing.recordEvents
      const loop = yield* AgentLoop
      // the first attempt: `record` completes, `deploy` is running when the turn is cut short
      const cut = yield* cutShort("a;deploy", save, () => log["deploy"]?.length === 1)
      expect(cut.status).toBe("aborted")
      expect(yield* stored("s")).toEqual([])

      const checkpoint = progress(saved.at(-1))
      expect([checkpoint.iteration, checkpoint.results, checkpoint.started.length]).toEqual([2, [], 1])
      const resumed = yield* loop.turn("s", "ignored: the input is in the checkpoint", { checkpoint: { save, resume: checkpoint, runner: "here" } })

      expect(resumed.status).toBe("completed")
      expect(resumed.turnId).toBe(cut.turnId)
      expect(resumed.iterations).toBe(3)
      expect(resumed.usage).toEqual({ inputTokens: 30, outputTokens: 15 })
      expect(log).toEqual({ record: ["a"], deploy: [""] })
      expect(resumed.finalMessage?.content).toBe(`done: ${Checkpoint.INTERRUPTED_BY_CRASH}`)
      const deployCall = checkpoint.produced.at(-1)!
      expect(deployCall.role === "assistant" && deployCall.toolCalls?.[0]?.name).toBe("deploy")
      const interrupted = resumed.messages.find((m) => m.role === "tool" && m.toolName === "deploy")
      expect(interrupted).toMatchObject({ content: Checkpoint.INTERRUPTED_BY_CRASH, isError: true })
      // the log holds the turn once: its input, both calls and their results, the answer
      const history = yield* stored("s")
      expect(history).toEqual(resumed.messages)
      expect(history.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "tool", "assistant"])
      expect(Message.textOf(history[0]!.content)).toBe("a;deploy")

      const seen = (yield* events.all).filter((e) => e.turnId === cut.turnId)
      const resumedEvent = seen.find((e) => e._tag === "Resumed")
      expect(resumedEvent).toMatchObject({ fromIteration: 2, iteration: 2, runner: "here", rerun: [], interrupted: [(deployCall as Message.AssistantMessage).toolCalls![0]!.id] })
      expect(seen.filter((e) => e._tag === "ToolExecSkipped").map((e) => e._tag === "ToolExecSkipped" && e.reason)).toEqual([Checkpoint.INTERRUPTED_BY_CRASH])
      expect(seen.filter((e) => e._tag === "TurnStart")).toHaveLength(2)
    }).pipe(Effect.provide(Testing.layer({ script, tools: toolsFor(log) })))
  })

  it.effect("resumes after a crash: an idempotent call in flight runs again, its finished neighbour does not", () => {
    const log = runs()
    return Effect.gen(function*() {
      const { saved, save } = saver()
      const events = yield* Testing.recordEvents
      const loop = yield* AgentLoop
      // two read-only calls in parallel: `slow` starts, `quick` finishes, `slow` is still running when the turn is cut short
      yield* cutShort("look:slow,look:quick", save, () => log["look"]?.length === 2)

      const checkpoint = progress(saved.at(-1))
      expect(checkpoint.results.map((r) => Message.textOf(r.content))).toEqual(["found quick"])
      const resumed = yield* loop.turn("s", "", { checkpoint: { save, resume: checkpoint } })
      expect(resumed.status).toBe("completed")
      expect(log["look"]).toEqual(["slow", "quick", "slow"])
      expect(resumed.messages.filter((m) => m.role === "tool").map((m) => Message.textOf(m.content))).toEqual(["found slow", "found quick"])
      const slowId = checkpoint.started.find((id) => id !== checkpoint.results[0]!.toolCallId)
      const resumedEvent = (yield* events.all).find((e) => e._tag === "Resumed")
      expect(resumedEvent).toMatchObject({ fromIteration: 1, rerun: [slowId], interrupted: [] })
      expect(resumedEvent && "runner" in resumedEvent).toBe(false)
      expect(yield* stored("s")).toEqual(resumed.messages)
    }).pipe(Effect.provide(Testing.layer({ script, tools: toolsFor(log) })))
  })

  it.effect("calls skipped by steering are saved with their results: a resume does not run them", () => {
    const log = runs()
    return Effect.gen(function*() {
      const { saved, save } = saver()
      const loop = yield* AgentLoop
      // `deploy` runs while steering arrives; `record b` is skipped; the next model call hangs when the turn is cut short
      yield* cutShort("go", save, () => log["deploy"]?.length === 1, Effect.gen(function*() {
        yield* loop.injectSteering("s", "stop there")
        yield* Testing.advance("1 hour")
        expect(yield* Testing.requests).toHaveLength(2)
      }))

      const checkpoint = progress(saved.at(-1))
      expect(checkpoint.results.map((r) => [r.toolName, r.isError === true])).toEqual([["deploy", false], ["record", true]])
      const resumed = yield* loop.turn("s", "", { checkpoint: { save, resume: checkpoint } })
      expect(resumed.status).toBe("completed")
      expect(log).toEqual({ deploy: [""] })
      expect(resumed.messages.filter((m) => m.role === "tool").map((m) => m.role === "tool" && m.isError === true)).toEqual([false, true])
    }).pipe(Effect.provide(Testing.layer({
      config: { steeringMode: "skip-remaining" },
      tools: toolsFor(log),
      script: [{ toolCalls: [{ name: "deploy" }, { name: "record", arguments: { note: "b" } }] }, { stall: true }, { content: "done" }]
    })))
  })

  it.effect("steering and a follow-up queued during a turn are saved before the caller is told; a resume after a crash keeps them", () => {
    const log = runs()
    return Effect.gen(function*() {
      const { saved, save } = saver()
      const loop = yield* AgentLoop
      // each is saved by the time the call returns, with what the turn had completed; then the process dies
      yield* cutShort("deploy", save, () => log["deploy"]?.length === 1, Effect.gen(function*() {
        const before = saved.length
        yield* loop.injectSteering("s", "also check the logs")
        expect(saved).toHaveLength(before + 1)
        expect(progress(saved.at(-1)).steering).toEqual(["also check the logs"])
        yield* loop.injectFollowUp("s", "then tell me")
        expect(saved).toHaveLength(before + 2)
      }))
      const checkpoint = progress(saved.at(-1))
      expect([checkpoint.steering, checkpoint.followUps, checkpoint.started.length]).toEqual([["also check the logs"], ["then tell me"], 1])
      // the turn resumes from the checkpoint
      const resumed = yield* loop.turn("s", "", { checkpoint: { save, resume: checkpoint } })
      expect(resumed.status).toBe("completed")
      expect(log).toEqual({ deploy: [""] })
      // the steering joined the conversation after the interrupted call; the follow-up is the session's next turn
      expect(resumed.messages.filter((m) => m.role === "user").map((m) => Message.textOf(m.content))).toEqual(["deploy", "also check the logs"])
      expect(resumed.followUps).toEqual(["then tell me"])
      expect(yield* stored("s")).toEqual(resumed.messages)
    }).pipe(Effect.provide(Testing.layer({ script, tools: toolsFor(log) })))
  })

  it.effect("before a turn's first save, queued steering saves nothing: no checkpoint without the turn's input or past its last step", () =>
    Effect.gen(function*() {
      const { saved, save } = saver()
      const loop = yield* AgentLoop
      // the first model call never answers: nothing was completed, so nothing is saved
      yield* cutShort("go", save, () => saved.length === 0, Effect.gen(function*() {
        expect(yield* Testing.requests).toHaveLength(1)
        yield* loop.injectSteering("s", "meanwhile")
        yield* loop.injectFollowUp("s", "later")
      }))
      expect(saved).toEqual([])
    }).pipe(Effect.provide(Testing.layer({ script: [{ stall: true }], tools: toolsFor(runs()) }))))

  it.effect("saves never overlap: while one is slow, the next waits, whoever asks (parallel results, queued steering)", () => {
    const log = runs()
    return Effect.gen(function*() {
      let active = 0
      let peak = 0
      let count = 0
      const saved: Array<Checkpoint.TurnCheckpoint> = []
      const save = (checkpoint: Checkpoint.Checkpoint) =>
        Effect.gen(function*() {
          saved.push(progress(checkpoint))
          active++
          peak = Math.max(peak, active)
          count++
          yield* Effect.sleep("1 second")
          active--
        })
      const loop = yield* AgentLoop
      // two read-only calls in parallel: their results are saved at once
      const turn = yield* Effect.forkChild(loop.turn("s", "look:a,look:b", { checkpoint: { save } }))
      yield* Testing.settled(Effect.sync(() => count === 1))
      const steering = yield* Effect.forkChild(loop.injectSteering("s", "also c"))
      yield* Testing.advance("1 minute")
      yield* Fiber.join(steering)
      expect((yield* Fiber.join(turn)).status).toBe("completed")
      // the reply's, the steering's (asked for while the first ran), the results'
      expect(count).toBeGreaterThanOrEqual(3)
      expect(saved.some((checkpoint) => checkpoint.steering?.[0] === "also c")).toBe(true)
      expect(peak).toBe(1)
    }).pipe(Effect.provide(Testing.layer({ script, tools: toolsFor(log) })))
  })

  it.effect("a follow-up queued during a turn is saved scrubbed of known secrets", () =>
    Effect.gen(function*() {
      const { saved, save } = saver()
      const loop = yield* AgentLoop
      yield* cutShort("deploy", save, () => saved.length === 2, loop.injectFollowUp("s", "use sk-live-0123456789abcdef"))
      expect(progress(saved.at(-1)).followUps).toEqual(["use <redacted>"])
    }).pipe(Effect.provide(Testing.layer({ script, tools: toolsFor(runs()) }).pipe(Layer.provide(SecretsLive.layer(["sk-live-0123456789abcdef"]))))))

  it.effect("steering whose save interrupts (another runner took the turn over) is refused with NoActiveTurn: it would be lost with this attempt", () => {
    const log = runs()
    return Effect.gen(function*() {
      let saves = 0
      // the reply's save and the one before `deploy` go through; then another attempt owns the turn
      const save = () => Effect.suspend(() => (++saves > 2 ? Effect.interrupt : Effect.void))
      const loop = yield* AgentLoop
      const errors: Array<string> = []
      yield* cutShort("deploy", save, () => log["deploy"]?.length === 1, Effect.gen(function*() {
        errors.push((yield* Effect.flip(loop.injectSteering("s", "too late")))._tag)
        errors.push((yield* Effect.flip(loop.injectFollowUp("s", "too late")))._tag)
      }))
      expect(errors).toEqual(["NoActiveTurn", "NoActiveTurn"])
    }).pipe(Effect.provide(Testing.layer({ script, tools: toolsFor(log) })))
  })

  it.effect("a save that interrupts (another runner took the turn over) stops the turn as a hard abort: aborted, nothing stored", () => {
    const log = runs()
    return Effect.gen(function*() {
      let saves = 0
      const save = () => Effect.suspend(() => (++saves === 2 ? Effect.interrupt : Effect.void))
      const result = yield* (yield* AgentLoop).turn("s", "a;b", { checkpoint: { save } })
      expect([result.status, result.messages]).toEqual(["aborted", []])
      // stopped before `record` ran: the save before it (it is not idempotent) was refused
      expect(log).toEqual({})
      expect(yield* stored("s")).toEqual([])
    }).pipe(Effect.provide(Testing.layer({ script, tools: toolsFor(log) })))
  })

  it.effect("a checkpoint taken on another history is not resumed: the turn ends aborted and writes nothing", () => {
    const log = runs()
    return Effect.gen(function*() {
      const { saved, save } = saver()
      const loop = yield* AgentLoop
      const first = yield* Effect.forkChild(loop.turn("s", "deploy", { checkpoint: { save } }))
      yield* Testing.settled(Effect.sync(() => log["deploy"]?.length === 1))
      yield* loop.interruptHard("s")
      yield* Fiber.join(first)
      yield* loop.turn("s", "meanwhile")
      const before = yield* stored("s")

      const result = yield* loop.turn("s", "", { checkpoint: { save, resume: progress(saved.at(-1)) } })
      expect(result.status).toBe("aborted")
      expect((result.failure as CheckpointStale | undefined)?._tag).toBe("CheckpointStale")
      expect(result.error).toContain("not resumed")
      expect(yield* stored("s")).toEqual(before)
      expect(log["deploy"]).toEqual([""])
    }).pipe(Effect.provide(Testing.layer({ script, tools: toolsFor(log) })))
  })

  it.effect("a turn that compressed its context before the crash resumes with the same context, and its log gets one compaction record", () => {
    const log = runs()
    return Effect.gen(function*() {
      const { saved, save } = saver()
      const loop = yield* AgentLoop
      const first = yield* Effect.forkChild(loop.turn("s", "new question", { checkpoint: { save } }))
      yield* Testing.settled(Effect.sync(() => log["deploy"]?.length === 1))
      yield* loop.interruptHard("s")
      yield* Fiber.join(first)
      expect(yield* stored("s")).toEqual(longHistory)

      const checkpoint = progress(saved.at(-1))
      expect(checkpoint.compaction?.reason).toBe("overflow")
      const resumed = yield* loop.turn("s", "", { checkpoint: { save, resume: checkpoint } })
      expect(resumed.status).toBe("completed")
      const [overflowed, compressed, afterResume] = yield* Testing.requests
      expect(compressed!.messages.length).toBeLessThan(overflowed!.messages.length)
      // the context the turn had (compressed) is where it picks up, then its reply and the call's result
      expect(afterResume!.messages).toEqual([...compressed!.messages, checkpoint.produced.at(-1), {
        role: "tool",
        toolCallId: expect.any(String),
        toolName: "deploy",
        content: Checkpoint.INTERRUPTED_BY_CRASH,
        isError: true
      }])
      const entries = yield* (yield* SessionStore).log("s")
      expect(entries.filter((entry) => entry.role === "compaction")).toHaveLength(1)
      expect(yield* stored("s")).toEqual([...afterResume!.messages.slice(1), resumed.finalMessage])
    }).pipe(Effect.provide(Testing.layer({
      config: { systemPrompt: "You are a test." },
      sessions: { s: longHistory },
      tools: toolsFor(log),
      script: [{ error: new ContextLengthExceeded({ message: "too long" }) }, { toolCalls: [{ name: "deploy" }] }, { content: "done" }]
    })))
  })

  it.effect("a known secret never reaches a checkpoint: the turn's messages are saved scrubbed, as the log stores them", () => {
    const log = runs()
    const secret = "sk-checkpoint-secret-0123456789"
    return Effect.gen(function*() {
      const { saved, save } = saver()
      const result = yield* (yield* AgentLoop).turn("s", `use ${secret};look:${secret}`, { checkpoint: { save } })
      expect(result.status).toBe("completed")
      expect(saved.length).toBeGreaterThan(0)
      for (const checkpoint of saved) expect(JSON.stringify(checkpoint)).not.toContain(secret)
      expect(JSON.stringify(saved.at(-1))).toContain("<redacted>")
    }).pipe(Effect.provide(Testing.layer({ script, tools: toolsFor(log) }).pipe(Layer.provide(SecretsLive.layer([secret])))))
  })

  /**
   * A tool whose result makes the next checkpoint exactly `limit + over` bytes: it measures the
   * checkpoint saved before it ran (the same, but for its result) and pads its answer to fit.
   */
  const bounded = (limit: number, over: number) => {
    const { saved, save } = saver()
    const pad = Tool.make({
      name: "pad",
      description: "answers with as much text as the checkpoint bound allows",
      parameters: Schema.Struct({}),
      execute: (_, context) =>
        Effect.sync(() => {
          const before = progress(saved.at(-1))
          const call = { id: context.toolCallId, name: "pad" }
          const base = sizeOf({ ...before, results: [Message.toolResult(call, "")] })
          return "x".repeat(limit + over - base)
        })
    })
    return { saved, save, pad }
  }

  const LIMIT = 4096

  it.effect("a checkpoint of exactly maxResponseBytes is saved", () => {
    const { saved, save, pad } = bounded(LIMIT, 0)
    return Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "pad", { checkpoint: { save } })
      expect(result.status).toBe("completed")
      const last = saved.at(-1)!
      expect(last._tag).toBe("TurnCheckpoint")
      expect(sizeOf(last)).toBe(LIMIT)
    }).pipe(Effect.provide(Testing.layer({ script: padScript, tools: [pad], config: { maxResponseBytes: LIMIT } })))
  })

  it.effect("one byte over maxResponseBytes, the turn is marked as outgrown and nothing more is saved", () => {
    const { saved, save, pad } = bounded(LIMIT, 1)
    return Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "pad;pad", { checkpoint: { save } })
      expect(result.status).toBe("completed")
      // the reply, `pad` starting, then its result: outgrown; the second `pad` saves nothing
      expect(saved.map((c) => c._tag)).toEqual(["TurnCheckpoint", "TurnCheckpoint", "CheckpointOutgrown"])
      expect(saved[2]).toEqual({ _tag: "CheckpointOutgrown", turnId: result.turnId, bytes: LIMIT + 1, limit: LIMIT })
      // the turn itself is whole: both calls ran and were stored
      expect(result.messages.filter((m) => m.role === "tool")).toHaveLength(2)
    }).pipe(Effect.provide(Testing.layer({ script: padScript, tools: [pad], config: { maxResponseBytes: LIMIT } })))
  })
})

/** `pad` once per `;`-separated step of the input, then `ok`. */
const padScript = (request: ProviderTypes.ProviderRequest) => {
  const user = request.messages.find((m) => m.role === "user")!
  const steps = Message.textOf(user.content).split(";").length
  const replies = request.messages.filter((m) => m.role === "assistant").length
  return replies < steps ? { toolCalls: [{ name: "pad" }] } : { content: "ok" }
}
