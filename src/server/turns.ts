/**
 * The turns started through the server: each runs on a fiber owned by the server's scope, under
 * an id the server gives it at once (the loop's own turn id is known only when the turn starts,
 * after the session's earlier turns), and keeps its result once done. Follow-ups left on a turn
 * (`TurnResult.followUps`) run after it as turns of their own. Done turns are kept up to a
 * bound, oldest forgotten first. With `paused` (a store that keeps paused turns), each turn keeps
 * its checkpoint there, and a turn paused by an earlier start of the server is continued under
 * the loop's id of the turn (`resume`).
 */
import { randomUUID } from "node:crypto"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import type { TurnCheckpoint } from "../domain/Checkpoint.ts"
import type { Content } from "../domain/Message.ts"
import type { TurnResult } from "../domain/Turn.ts"
import type { AgentLoopShape } from "../services/AgentLoop.ts"
import type { TurnState } from "./Api.ts"
import type { PausedTurns } from "./paused.ts"

/** The turns of one server. */
export class Turns {
  private readonly turns = new Map<string, TurnState>()
  /** Opened when the turn of that id ends, for the requests waiting on it. */
  private readonly ended = new Map<string, Deferred.Deferred<void>>()
  private readonly loop: AgentLoopShape
  private readonly fibers: FiberSet.FiberSet<void>
  private readonly kept: number
  private readonly paused: PausedTurns | undefined

  constructor(loop: AgentLoopShape, fibers: FiberSet.FiberSet<void>, kept = 10_000, paused?: PausedTurns) {
    this.loop = loop
    this.fibers = fibers
    this.kept = kept
    this.paused = paused
  }

  /** Starts a turn (after the session's earlier ones) and returns its id at once. */
  start(sessionKey: string, message: string): Effect.Effect<string> {
    return this.run(randomUUID(), sessionKey, message)
  }

  /** Continues a turn paused by an earlier start of the server, from its checkpoint, under the loop's id of the turn. */
  resume(sessionKey: string, checkpoint: TurnCheckpoint): Effect.Effect<string> {
    const input = checkpoint.produced[0]
    return this.run(checkpoint.turnId, sessionKey, input?.role === "user" ? input.content : "", checkpoint)
  }

  private run(turnId: string, sessionKey: string, input: Content, resume?: TurnCheckpoint): Effect.Effect<string> {
    return Effect.suspend(() => {
      const paused = this.paused
      this.turns.set(turnId, { turnId, sessionKey, status: "running" })
      this.ended.set(turnId, Deferred.makeUnsafe<void>())
      return this.loop.turn(sessionKey, input, paused === undefined ? {} : { checkpoint: paused.checkpointing(sessionKey, resume) }).pipe(
        Effect.tap((result) => paused === undefined ? Effect.void : paused.ended(sessionKey, result.turnId)),
        Effect.flatMap((result) => Effect.sync(() => this.done(turnId, sessionKey, result))),
        // follow-ups a hook or another door queued on this turn run as turns of their own
        Effect.andThen((result) => Effect.forEach(result.followUps, (message) => this.start(sessionKey, message), { discard: true })),
        FiberSet.run(this.fibers),
        Effect.as(turnId)
      )
    })
  }

  /** A turn's state, if this server started it and still remembers it. */
  get(turnId: string): TurnState | undefined {
    return this.turns.get(turnId)
  }

  /** Whether a turn this server started in the session is running or waiting to. */
  running(sessionKey: string): boolean {
    for (const state of this.turns.values()) if (state.sessionKey === sessionKey && state.status === "running") return true
    return false
  }

  /** The turn's state once it ends, or when `wait` has passed, whichever is first. */
  awaitEnd(turnId: string, wait: Duration.Duration): Effect.Effect<TurnState | undefined> {
    return Effect.suspend(() => {
      const ended = this.ended.get(turnId)
      const answer = Effect.sync(() => this.turns.get(turnId))
      return ended === undefined || Duration.isZero(wait) ? answer : Effect.andThen(Effect.timeoutOption(Deferred.await(ended), wait), answer)
    })
  }

  private done(turnId: string, sessionKey: string, result: TurnResult): TurnResult {
    this.turns.set(turnId, { turnId, sessionKey, status: "done", result })
    const ended = this.ended.get(turnId)
    this.ended.delete(turnId)
    if (ended !== undefined) Deferred.doneUnsafe(ended, Exit.void)
    for (const [id, state] of this.turns) {
      if (this.turns.size <= this.kept) break
      if (state.status === "done") this.turns.delete(id)
    }
    return result
  }
}
