/**
 * Turns paused on a call waiting for approval, kept in the session store so that they outlive
 * the server (`SessionStore.paused`, the SQL store's): the human-in-the-loop pause and resume.
 *
 * Each turn the server starts keeps its latest checkpoint here (`Checkpoint.ts`: saved after each
 * model reply that asks for tools, before each call that is not idempotent and after each call's
 * result), in memory. When one of its calls needs approval, the pending approval is stored with
 * that checkpoint before it is announced; its decision is stored too, and from then on each of the
 * turn's checkpoints, before the step goes on; when the turn ends, its paused calls are forgotten. A server started again
 * over the same store restores the pending approvals (`GET /v1/approvals` lists them), and a
 * decision on one continues its turn from the checkpoint (`loop.turn` with `checkpoint.resume`):
 * the call is asked again, answered by the decision at once, and the turn goes on (the tool runs,
 * the model gets its result; or the model is told of the denial). A decision taken while no turn
 * waited (stored, then the server stopped before the turn went on) continues the turn at the start.
 *
 * A turn cut by the server stopping leaves its calls kept (`stopping`): the next start finds them.
 * A store that fails is logged, and the approval lives in memory as without a durable store.
 */
import * as Effect from "effect/Effect"
import type { Checkpointing, TurnCheckpoint } from "../domain/Checkpoint.ts"
import type { PausedCall } from "../domain/PausedTurn.ts"
import type { PausedTurnStore } from "../services/SessionStore.ts"
import type { Approval } from "./Api.ts"
import type { Durable } from "./approvals.ts"

/** The paused turns of one server. */
export class PausedTurns {
  /** The latest checkpoint of each turn running here, by the loop's turn id. */
  private readonly checkpoints = new Map<string, TurnCheckpoint>()
  /** The checkpoints of turns restored from the store, not yet continued, by turn id. */
  private readonly restored = new Map<string, TurnCheckpoint>()
  /** Turns running (or continued) in this process. */
  private readonly running = new Set<string>()
  /** Turns with calls kept in the store: only their end costs a write. */
  private readonly kept = new Set<string>()
  private stopped = false
  private readonly store: PausedTurnStore
  /** Continues a restored turn from its checkpoint (`Turns.resume`). */
  continueTurn: (sessionKey: string, checkpoint: TurnCheckpoint) => Effect.Effect<void> = () => Effect.void

  constructor(store: PausedTurnStore) {
    this.store = store
  }

  /** The server is stopping: turns cut from now on keep their paused calls. */
  stop(): void {
    this.stopped = true
  }

  /**
   * The checkpointing of a turn the server starts, or continues from `resume`. A turn with calls
   * kept in the store keeps its progress there too, before each step goes on (a call that is not
   * idempotent is then not run twice after a crash: the loop tells the model it was cut), and one
   * that outgrew the checkpoint bound is forgotten there (it can no longer resume).
   */
  checkpointing(sessionKey: string, resume?: TurnCheckpoint): Checkpointing {
    if (resume !== undefined) this.running.add(resume.turnId)
    return {
      save: (checkpoint) =>
        Effect.suspend(() => {
          const turnId = checkpoint.turnId
          this.running.add(turnId)
          if (checkpoint._tag === "TurnCheckpoint") {
            this.checkpoints.set(turnId, checkpoint)
            return this.kept.has(turnId) ? logged(this.store.progress(sessionKey, checkpoint)) : Effect.void
          }
          this.checkpoints.delete(turnId)
          return this.kept.delete(turnId) ? logged(this.store.forget(sessionKey, turnId)) : Effect.void
        }),
      ...(resume === undefined ? {} : { resume })
    }
  }

  /** A turn ended: its paused calls are forgotten (not when the server stopping cut it). */
  ended(sessionKey: string, turnId: string): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (this.stopped) return Effect.void
      this.checkpoints.delete(turnId)
      this.running.delete(turnId)
      if (!this.kept.delete(turnId)) return Effect.void
      return logged(this.store.forget(sessionKey, turnId))
    })
  }

  /** The paused calls an earlier start kept: their approvals to restore; those decided are continued at once. */
  restore(): Effect.Effect<ReadonlyArray<PausedCall>> {
    const fallback: ReadonlyArray<PausedCall> = []
    return this.store.list.pipe(
      Effect.catch((error) => Effect.as(Effect.logWarning(`server: cannot read the paused turns: ${error.message}`), fallback)),
      Effect.tap((calls) =>
        Effect.sync(() => {
          for (const call of calls) {
            this.kept.add(call.approval.turnId)
            const known = this.restored.get(call.approval.turnId)
            // the turn's latest checkpoint: a later step's, or a later call of its batch (with the earlier ones' results)
            const later = known === undefined || known.iteration < call.checkpoint.iteration ||
              (known.iteration === call.checkpoint.iteration && known.results.length <= call.checkpoint.results.length)
            if (later) this.restored.set(call.approval.turnId, call.checkpoint)
          }
        })
      )
    )
  }

  /** Continues the turns whose calls were decided while no turn waited. */
  continueDecided(calls: ReadonlyArray<PausedCall>): Effect.Effect<void> {
    return Effect.forEach(calls.filter((call) => call.approval.status !== "pending"), (call) => this.resume(call.approval), { discard: true })
  }

  private resume(approval: Approval): Effect.Effect<void> {
    return Effect.suspend(() => {
      const checkpoint = this.restored.get(approval.turnId)
      if (checkpoint === undefined || this.running.has(approval.turnId)) return Effect.void
      this.restored.delete(approval.turnId)
      return this.continueTurn(approval.sessionKey, checkpoint)
    })
  }

  /** What the approvals call (`approvals.ts`). */
  readonly durable: Durable = {
    requested: (approval) =>
      Effect.suspend(() => {
        const checkpoint = this.checkpoints.get(approval.turnId)
        // a turn the server did not start (a sub-turn, another door's) has no checkpoint here: it is not kept
        if (checkpoint === undefined) return Effect.void
        this.kept.add(approval.turnId)
        return logged(this.store.put({ approval, checkpoint }))
      }),
    decided: (approval, waited) => Effect.andThen(logged(this.store.decide(approval)), waited ? Effect.void : this.resume(approval)),
    stopping: () => this.stopped
  }
}

const logged = (effect: Effect.Effect<void, { readonly message: string }>) =>
  Effect.catch(effect, (error) => Effect.logWarning(`server: ${error.message}`))
