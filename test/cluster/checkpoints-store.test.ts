/**
 * Unit tests of the cluster's checkpoint table (`cluster/checkpoints.ts`), fenced by the request's
 * claim (`cluster/claims.ts`), and of how a redelivered request is prepared from it
 * (`cluster/resume.ts`), on an embedded SQLite database: the same SQL the runners send to
 * Postgres, without a server.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Cause, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { AgentEvent, Checkpoint, EventBus, EventBusLive, Message, NodeSqliteClient, type Turn, Usage } from "effect-agent-loop"
import * as Checkpoints from "../../src/cluster/checkpoints.ts"
import * as Claims from "../../src/cluster/claims.ts"
import * as Resume from "../../src/cluster/resume.ts"

const database = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-loop-checkpoints-"))
  return NodeSqliteClient.layer({ filename: path.join(dir, "cluster.db") }).pipe(Layer.orDie)
}

const progress = (iteration: number): Checkpoint.TurnCheckpoint => ({
  _tag: "TurnCheckpoint",
  turnId: "turn-1",
  iteration,
  historyLength: 0,
  usage: Usage.empty,
  produced: [Message.user("hi"), Message.assistant("", [{ id: "c1", name: "record", arguments: "{}" }])],
  stopBlocks: 0,
  results: [],
  started: ["c1"]
})

const outgrown: Checkpoint.CheckpointOutgrown = { _tag: "CheckpointOutgrown", turnId: "turn-1", bytes: 10, limit: 5 }

const rows = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return (yield* sql<{ readonly n: number }>`SELECT count(*) AS n FROM agent_loop_turn_checkpoints`.pipe(Effect.orDie))[0]!.n
})

/** A turn's result; its messages are what it stored. */
const result: Turn.TurnResult = {
  turnId: "turn-1",
  sessionKey: "s",
  status: "completed",
  messages: [{ role: "user", content: "hi" }],
  followUps: [],
  iterations: 1,
  usage: Usage.empty
}

/** Where attempt `owner` saves request `requestId`'s checkpoint. */
/** A claim that was granted (these claims carry no epoch, so each is). */
const claimed = (claim: Claims.Claim): Claims.Claimed => {
  if (claim._tag !== "Claimed") throw new Error("the claim was refused as stale")
  return claim
}

const slot = (requestId: string, owner: string): Checkpoints.Slot => ({ key: requestId, requestId, sessionKey: "s", owner })

describe("cluster checkpoints", () => {
  it.effect("a request's checkpoint is saved, replaced, taken over and removed; a row that no longer decodes reads as outgrown", () =>
    Effect.gen(function*() {
      const claims = yield* Claims.make
      const checkpoints = yield* Checkpoints.make
      const a = claimed(yield* claims.claim("r1", "s", 0))
      expect(a.fresh).toBe(true)
      expect(yield* checkpoints.take("r1", a.attempt)).toEqual(Option.none())
      expect(yield* checkpoints.save(slot("r1", a.attempt), progress(1), 1, true)).toBe(true)
      expect(yield* checkpoints.save(slot("r1", a.attempt), progress(2), 2, false)).toBe(true)
      expect(yield* rows).toBe(1)
      // another attempt claims the request and takes the row over: from then on the first can neither save nor delete it
      const b = claimed(yield* claims.claim("r1", "s", 0))
      expect(b.fresh).toBe(false)
      expect(yield* checkpoints.take("r1", b.attempt)).toEqual(Option.some(progress(2)))
      expect(yield* checkpoints.save(slot("r1", a.attempt), progress(3), 3, false)).toBe(false)
      yield* checkpoints.remove("r1", a.attempt)
      expect(yield* checkpoints.take("r1", b.attempt)).toEqual(Option.some(progress(2)))
      expect(yield* checkpoints.save(slot("r1", b.attempt), progress(3), 3, false)).toBe(true)
      yield* checkpoints.remove("r1", b.attempt)
      expect(yield* checkpoints.take("r1", b.attempt)).toEqual(Option.none())
      // a later save finds no row: the turn ended under another attempt, nothing is brought back
      expect(yield* checkpoints.save(slot("r1", a.attempt), progress(4), 4, false)).toBe(false)
      expect(yield* rows).toBe(0)

      // an attempt frozen before its first save: once another claimed the request, it cannot start a row
      const frozen = claimed(yield* claims.claim("r3", "s", 0))
      const taker = claimed(yield* claims.claim("r3", "s", 0))
      expect(yield* checkpoints.save(slot("r3", frozen.attempt), progress(1), 1, true)).toBe(false)
      expect(yield* rows).toBe(0)
      expect(yield* checkpoints.save(slot("r3", taker.attempt), progress(1), 1, true)).toBe(true)

      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO agent_loop_turn_checkpoints (request_id, session_key, owner, checkpoint, saved_at) VALUES ('r2', 's', 'a', '{"_tag":"Other"}', 0)`
        .pipe(Effect.orDie)
      expect(Option.map(yield* checkpoints.take("r2", "b"), (c) => c._tag)).toEqual(Option.some("CheckpointOutgrown"))
    }).pipe(Effect.provide(database())))

  it.effect("a first delivery saves as it goes and removes its row at the end; a redelivery resumes from the row, or not at all without one", () =>
    Effect.gen(function*() {
      const claims = yield* Claims.make
      const checkpoints = yield* Checkpoints.make
      const resume = yield* Resume.make
      /** The request claimed by a new attempt (its first delivery, or a later one taking it over). */
      const claim = (requestId: string) => Effect.map(claims.claim(requestId, "s", 0), claimed)
      /** What an earlier attempt at the request saved before its runner stopped. */
      const savedBefore = (requestId: string, checkpoint: Checkpoint.Checkpoint) =>
        Effect.flatMap(claim(requestId), (earlier) => checkpoints.save(slot(requestId, earlier.attempt), checkpoint, 0, true))

      const fresh = (yield* resume.prepare("r1", "s", yield* claim("r1"), "here:1"))!
      expect(fresh.checkpoint.resume).toBeUndefined()
      const first = yield* fresh.turn(Effect.as(fresh.checkpoint.save(progress(1)), result))
      expect([first, fresh.resumed()]).toEqual([result, undefined])
      expect(yield* rows).toBe(0)

      // a redelivered request: nothing saved (its first model call was in flight) → not resumable
      yield* claim("r2")
      expect(yield* resume.prepare("r2", "s", yield* claim("r2"), "here:1")).toBeUndefined()
      // … unless replayed (a store that fences): then it runs again from the start
      const replayed = (yield* resume.prepare("r2", "s", yield* claim("r2"), "here:1", undefined, true))!
      expect(replayed.checkpoint.resume).toBeUndefined()
      // a turn that saved progress and ended with nothing stored (its calls may have run): its row
      // stays, marked ended, and a redelivery neither resumes nor replays it
      const unstored = (yield* resume.prepare("r9", "s", yield* claim("r9"), "here:1"))!
      yield* unstored.turn(Effect.as(unstored.checkpoint.save(progress(1)), { ...result, status: "aborted", messages: [] }))
      expect(yield* rows).toBe(1)
      expect(yield* resume.prepare("r9", "s", yield* claim("r9"), "here:1", undefined, true)).toBeUndefined()
      // outgrown → not resumable, and its row is gone (the ended one's too)
      yield* savedBefore("r3", outgrown)
      expect(yield* resume.prepare("r3", "s", yield* claim("r3"), "here:1")).toBeUndefined()
      expect(yield* rows).toBe(0)
      // its commit is in the log (the store said so): the checkpoint is dropped, nothing resumes
      yield* savedBefore("r5", progress(2))
      expect(yield* resume.forget("r5")).toBeUndefined()
      expect(yield* rows).toBe(0)
      // saved progress → resumed from it, by this runner, and the row removed when the turn ends
      yield* savedBefore("r4", progress(2))
      const again = (yield* resume.prepare("r4", "s", yield* claim("r4"), "here:1"))!
      expect([again.checkpoint.resume, again.checkpoint.runner]).toEqual([progress(2), "here:1"])
      const bus = yield* EventBus
      const event = AgentEvent.make("Resumed", { turnId: "turn-1", sessionKey: "s", iteration: 2, depth: 0 }, 0, {
        fromIteration: 2,
        runner: "here:1",
        rerun: [],
        interrupted: ["c1"]
      })
      yield* again.turn(Effect.gen(function*() {
        yield* bus.publish(event)
        // a new Events stream of the session is told of the running resumed turn first, even one
        // subscribing right after the resume (before any other fiber ran)
        expect(yield* resume.running("s")).toEqual([event])
        expect(yield* resume.running("other")).toEqual([])
        return result
      }))
      expect(again.resumed()).toEqual(event)
      expect(yield* rows).toBe(0)

      // a turn another runner took over stops at its next save, as a hard abort does, and leaves the row alone
      const frozen = (yield* resume.prepare("r6", "s", yield* claim("r6"), "here:1"))!
      yield* frozen.checkpoint.save(progress(1))
      const taker = (yield* resume.prepare("r6", "s", yield* claim("r6"), "there:2"))!
      expect(taker.checkpoint.resume).toEqual(progress(1))
      const woke = yield* Effect.exit(frozen.turn(Effect.as(frozen.checkpoint.save(progress(2)), result)))
      expect(woke._tag === "Failure" && Cause.hasInterruptsOnly(woke.cause)).toBe(true)
      expect(Option.map(yield* checkpoints.take("r6", "check"), (c) => c._tag === "TurnCheckpoint" && c.iteration)).toEqual(Option.some(1))

      // nor does it go on once the attempt that took it over has ended and removed the row
      const asleep = (yield* resume.prepare("r7", "s", yield* claim("r7"), "here:1"))!
      yield* asleep.checkpoint.save(progress(1))
      const finisher = (yield* resume.prepare("r7", "s", yield* claim("r7"), "there:2"))!
      yield* finisher.turn(Effect.succeed(result))
      const sql = yield* SqlClient.SqlClient
      const r7 = sql<{ readonly n: number }>`SELECT count(*) AS n FROM agent_loop_turn_checkpoints WHERE request_id = 'r7'`.pipe(Effect.orDie)
      expect((yield* r7)[0]!.n).toBe(0)
      const late = yield* Effect.exit(asleep.turn(Effect.as(asleep.checkpoint.save(progress(2)), result)))
      expect(late._tag === "Failure" && Cause.hasInterruptsOnly(late.cause)).toBe(true)
      expect((yield* r7)[0]!.n).toBe(0)

      // nor one frozen before its first save, once another attempt got the request (and, nothing
      // being saved, reported its turn lost): its first save stops it, and leaves no row
      const sleeper = (yield* resume.prepare("r8", "s", yield* claim("r8"), "here:1"))!
      expect(yield* resume.prepare("r8", "s", yield* claim("r8"), "there:2")).toBeUndefined()
      const woke8 = yield* Effect.exit(sleeper.turn(Effect.as(sleeper.checkpoint.save(progress(1)), result)))
      expect(woke8._tag === "Failure" && Cause.hasInterruptsOnly(woke8.cause)).toBe(true)
      expect(yield* checkpoints.keys("r8")).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(Layer.merge(database(), EventBusLive.layerCapacity()))))

  it.effect("a request claimed under a later ownership of its session cannot be claimed under an earlier one", () =>
    Effect.gen(function*() {
      const claims = yield* Claims.make
      expect((yield* claims.claim("e1", "s", 0, 2))._tag).toBe("Claimed")
      // a runner that froze and woke up, with the session's earlier ownership: refused, the claim stays the later owner's
      expect(yield* claims.claim("e1", "s", 0, 1)).toEqual({ _tag: "Stale" })
      expect(yield* claims.claim("e1", "s", 0, 2)).toMatchObject({ _tag: "Claimed", fresh: false })
      expect(yield* claims.claim("e1", "s", 0, 3)).toMatchObject({ _tag: "Claimed", fresh: false })
      expect(yield* claims.claim("e1", "s", 0, 2)).toEqual({ _tag: "Stale" })
    }).pipe(Effect.provide(database())))
})
