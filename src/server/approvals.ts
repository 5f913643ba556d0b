/**
 * Approvals over the wire: the server registers an `approveTool` hook on the loop, so a tool call
 * that needs approval becomes a pending approval (a resource at `GET /v1/approvals` and an
 * `ApprovalRequested` event) and the turn waits for the decision. The hook's time limit is the
 * loop's `approvalTimeout`: past it the call is denied and the approval ends `timeout`.
 *
 * A decision is idempotent: the same decision again answers as the first did; another decision
 * on a decided approval is refused (`AlreadyDecided`), so the first one stands. Decided approvals
 * are kept (up to `kept`) so that a repeated decision still finds its approval.
 *
 * With `durable` (a store that keeps paused turns, `paused.ts`), a pending approval is kept in the
 * store with what its turn had completed, and a decision beside it: a server started again
 * `restore`s them, and a decision on one whose turn is no longer running continues the turn. A
 * wait cut by the server stopping leaves its approval pending for the next start.
 */
import { randomUUID } from "node:crypto"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Hook from "../domain/Hook.ts"
import type { SecretsShape } from "../services/Secrets.ts"
import { AlreadyDecided, type Approval, ApprovalNotFound } from "./Api.ts"
import type { ApprovalEvent } from "./eventFeed.ts"

/** A decision as it reaches the turn. */
type Decision = { readonly decision: "allow" | "deny"; readonly reason?: string }

/** How approvals outlive the server (`paused.ts`). */
export interface Durable {
  /** Keeps a new pending approval, with what its turn completed so far. */
  readonly requested: (approval: Approval) => Effect.Effect<void>
  /** Keeps a decision (or a timeout); `waited`: a turn was waiting for it in this process. */
  readonly decided: (approval: Approval, waited: boolean) => Effect.Effect<void>
  /** Whether the server is stopping: a wait cut then leaves its approval pending. */
  readonly stopping: () => boolean
}

interface Entry {
  approval: Approval
  readonly decided: Deferred.Deferred<Decision>
  /** Whether a turn of this process waits for it (not so for one restored from the store). */
  waited: boolean
}

/** The approvals of one server. */
export class Approvals {
  private readonly entries = new Map<string, Entry>()
  private readonly listeners = new Set<(event: ApprovalEvent) => void>()
  private readonly publish: (event: ApprovalEvent) => void
  private readonly scrub: SecretsShape["scrub"]
  private readonly kept: number
  private readonly durable: Durable | undefined

  constructor(options: { readonly publish: (event: ApprovalEvent) => void; readonly scrub: SecretsShape["scrub"]; readonly kept?: number; readonly durable?: Durable }) {
    this.publish = options.publish
    this.scrub = options.scrub
    this.kept = options.kept ?? 1000
    this.durable = options.durable
  }

  /** An approval kept in the store by an earlier start of the server, pending or decided. */
  restore(approval: Approval): void {
    if (this.entries.has(approval.id)) return
    this.entries.set(approval.id, { approval, decided: Deferred.makeUnsafe<Decision>(), waited: false })
  }

  /** Calls `listener` with every approval requested or resolved from now on (other doors: A2A); returns the function that stops it. */
  listen(listener: (event: ApprovalEvent) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  private announce(event: ApprovalEvent): void {
    this.publish(event)
    for (const listener of this.listeners) listener(event)
  }

  /** Pending approvals first, then the decided ones kept, newest last. */
  list(): ReadonlyArray<Approval> {
    const all = [...this.entries.values()].map((entry) => entry.approval)
    return [...all.filter((a) => a.status === "pending"), ...all.filter((a) => a.status !== "pending")]
  }

  /** An approval, pending or decided, if this server still has it. */
  get(id: string): Approval | undefined {
    return this.entries.get(id)?.approval
  }

  /** The hook the server registers: each call that needs approval waits here for a decision. */
  readonly hook: Hook.Hook = {
    approveTool: ({ context, call }) => this.request(context, call)
  }

  private request(context: Hook.HookContext, call: Hook.HookToolCall): Effect.Effect<Hook.Approve | Hook.Deny> {
    const self = this
    return Effect.gen(function*() {
        // a turn continued after a restart asks again for the call it had paused on: its approval answers
        const known = [...self.entries.values()].find((e) =>
          e.approval.turnId === context.turnId && e.approval.sessionKey === context.sessionKey && e.approval.toolCallId === call.id
        )
        if (known !== undefined && known.approval.status !== "timeout") return yield* self.wait(known)
        const id = randomUUID()
        const decided = yield* Deferred.make<Decision>()
        const approval: Approval = {
          id,
          sessionKey: context.sessionKey,
          turnId: context.turnId,
          toolCallId: call.id,
          toolName: call.name,
          // the arguments go out to clients: scrubbed like every other text the server sends
          arguments: JSON.parse(self.scrub(JSON.stringify(call.arguments ?? null))),
          requestedAt: yield* Clock.currentTimeMillis,
          status: "pending"
        }
        const entry: Entry = { approval, decided, waited: true }
        self.entries.set(id, entry)
        self.trim()
        if (self.durable !== undefined) yield* self.durable.requested(approval)
        self.announce({ _tag: "ApprovalRequested", sessionKey: approval.sessionKey, turnId: approval.turnId, approval })
        return yield* self.wait(entry)
    })
  }

  /** Waits for the entry's decision (at once when it has one). */
  private wait(entry: Entry): Effect.Effect<Hook.Approve | Hook.Deny> {
    entry.waited = true
    const answer = (decision: Decision) => decision.decision === "allow" ? Hook.approve : Hook.deny(decision.reason ?? "denied by the user")
    const { status, reason } = entry.approval
    if (status === "allow" || status === "deny") return Effect.succeed(answer({ decision: status, ...(reason === undefined ? {} : { reason }) }))
    return Deferred.await(entry.decided).pipe(
      Effect.map(answer),
      // the hook runner's time limit (approvalTimeout) interrupts the wait: the call is denied; the
      // server stopping does too, and then the approval stays pending for its next start
      Effect.onInterrupt(() =>
        this.durable?.stopping() === true ? Effect.void : Effect.andThen(Effect.sync(() => this.settle(entry, { status: "timeout" })), this.store(entry))
      )
    )
  }

  /** Keeps the entry's decision in the store, when approvals are durable. */
  private store(entry: Entry): Effect.Effect<void> {
    return this.durable === undefined ? Effect.void : this.durable.decided(entry.approval, entry.waited)
  }

  /** Decides a pending approval; the same decision again answers alike, another is refused. */
  decide(id: string, decision: Decision): Effect.Effect<Approval, ApprovalNotFound | AlreadyDecided> {
    return Effect.suspend((): Effect.Effect<Approval, ApprovalNotFound | AlreadyDecided> => {
      const entry = this.entries.get(id)
      if (entry === undefined) return Effect.fail(new ApprovalNotFound({ id }))
      const status = entry.approval.status
      if (status === "pending") {
        this.settle(entry, { status: decision.decision, ...(decision.reason === undefined ? {} : { reason: decision.reason }) })
        return Effect.as(Effect.andThen(this.store(entry), Deferred.succeed(entry.decided, decision)), entry.approval)
      }
      return status === decision.decision ? Effect.succeed(entry.approval) : Effect.fail(new AlreadyDecided({ id, decision: status }))
    })
  }

  private settle(entry: Entry, outcome: Pick<Approval, "status" | "reason">): void {
    if (entry.approval.status !== "pending") return
    entry.approval = { ...entry.approval, ...outcome }
    this.announce({ _tag: "ApprovalResolved", sessionKey: entry.approval.sessionKey, turnId: entry.approval.turnId, approval: entry.approval })
  }

  /** Forgets the oldest decided approvals past the bound; pending ones are always kept. */
  private trim(): void {
    if (this.entries.size <= this.kept) return
    for (const [id, entry] of this.entries) {
      if (this.entries.size <= this.kept) return
      if (entry.approval.status !== "pending") this.entries.delete(id)
    }
  }
}
