/**
 * A2A tasks over the loop: a task is a turn, its `contextId` the session key (one session per
 * context, so a context's tasks share a conversation). The task is `submitted`, `working` once the
 * turn starts, `input-required` while a tool call of its turn waits for approval (the server's
 * approvals, so the same call can be decided over the HTTP API too), and ends `completed` (the
 * final answer as an artifact: a text part, and a data part with the typed answer when one was
 * asked for), `failed`, `rejected` (a hook blocked the turn) or `canceled` (stopped now).
 *
 * A message on a task waiting for approval answers it: a data part `{"decision": "approve" |
 * "deny", "reason"?, "approvalId"?}` or the text `approve` / `deny[: reason]`. A message on a
 * working task is steering for its turn. A context runs one task at a time.
 */
import { randomUUID } from "node:crypto"
import type * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Queue from "effect/Queue"
import type * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../domain/Event.ts"
import { textOf as messageText } from "../../domain/Message.ts"
import type { TurnResult } from "../../domain/Turn.ts"
import type { AgentLoopShape, TurnOptions } from "../../services/AgentLoop.ts"
import * as Wire from "./wire.ts"

/** A tool call waiting for a decision, as the server's approvals hold it. */
export interface ApprovalLike {
  readonly id: string
  readonly sessionKey: string
  readonly toolCallId: string
  readonly toolName: string
  readonly arguments: unknown
  readonly status: string
}

/** Imports a JSON Schema a client sent as the Schema that decodes a typed answer; fails with what is wrong with it. */
export type OutputSchemaLoader = (json: unknown) => Effect.Effect<{ readonly schema: Schema.Decoder<unknown>; readonly jsonSchema: Record<string, unknown> }, string>

/** The server's approvals, as a task needs them: told of each one, deciding them. */
export interface ApprovalDesk {
  readonly decide: (id: string, decision: { readonly decision: "allow" | "deny"; readonly reason?: string }) => Effect.Effect<unknown, unknown>
  readonly listen: (listener: (event: { readonly _tag: "ApprovalRequested" | "ApprovalResolved"; readonly approval: ApprovalLike }) => void) => () => void
}

interface Entry {
  readonly id: string
  readonly contextId: string
  status: Wire.TaskStatus
  readonly history: Array<Wire.Message>
  readonly artifacts: Array<Wire.Artifact>
  /** The loop's id of the turn, once it started. */
  turnId: string | undefined
  cancelRequested: boolean
  /** Its turn's calls waiting for approval, oldest first. */
  readonly pending: Array<ApprovalLike>
  readonly listeners: Set<(event: Wire.StreamEvent) => void>
  readonly ended: Deferred.Deferred<void>
}

/** How long a cancel waits for the turn to stop before it answers with the task as it is. */
const CANCEL_WAIT = Duration.seconds(30)

/** The tasks of one server. */
export class Tasks {
  private readonly tasks = new Map<string, Entry>()
  /** The task of each context that has not ended. */
  private readonly running = new Map<string, Entry>()
  private readonly loop: AgentLoopShape
  private readonly fibers: FiberSet.FiberSet<void>
  private readonly scrub: (text: string) => string
  private readonly desk: ApprovalDesk | undefined
  private readonly outputSchema: OutputSchemaLoader | undefined
  private readonly kept: number

  constructor(options: {
    readonly loop: AgentLoopShape
    readonly fibers: FiberSet.FiberSet<void>
    readonly scrub: (text: string) => string
    readonly desk?: ApprovalDesk
    readonly outputSchema?: OutputSchemaLoader
    readonly kept?: number
  }) {
    this.loop = options.loop
    this.fibers = options.fibers
    this.scrub = options.scrub
    this.desk = options.desk
    this.outputSchema = options.outputSchema
    this.kept = options.kept ?? 1000
  }

  /** Follows the server's approvals (call once; the returned function stops it). */
  watchApprovals(): () => void {
    if (this.desk === undefined) return () => undefined
    return this.desk.listen((event) => {
      const entry = this.running.get(event.approval.sessionKey)
      if (entry === undefined || Wire.isTerminal(entry.status.state)) return
      if (event._tag === "ApprovalRequested") {
        entry.pending.push(event.approval)
        if (entry.pending.length === 1) this.setStatus(entry, "TASK_STATE_INPUT_REQUIRED", Wire.approvalRequest(entry, event.approval))
        return
      }
      const index = entry.pending.findIndex((approval) => approval.id === event.approval.id)
      if (index < 0) return
      entry.pending.splice(index, 1)
      const next = entry.pending[0]
      this.setStatus(entry, next === undefined ? "TASK_STATE_WORKING" : "TASK_STATE_INPUT_REQUIRED", next === undefined ? undefined : Wire.approvalRequest(entry, next))
    })
  }

  /**
   * A message from the client: a new task (no `taskId`), the answer to an approval, or steering.
   * The returned stream starts with the task as it is then and follows it until it ends or waits
   * for the client (input-required); its listener is in place before anything is done (`close`
   * drops it, for a client that will not read the stream).
   */
  receive(
    params: Wire.SendMessageParams
  ): Effect.Effect<{ readonly task: Wire.Task; readonly events: Stream.Stream<Wire.StreamEvent>; readonly close: () => void }, Wire.RpcError> {
    const self = this
    return Effect.gen(function*() {
      const message = params.message
      if (message.role !== "ROLE_USER") return yield* Effect.fail(new Wire.RpcError(Wire.ErrorCode.InvalidParams, "message.role: a client's message is ROLE_USER"))
      if (message.taskId !== undefined && message.taskId !== "") {
        const entry = yield* self.entryOf(message.taskId)
        if (message.contextId !== undefined && message.contextId !== "" && message.contextId !== entry.contextId) {
          return yield* Effect.fail(new Wire.RpcError(Wire.ErrorCode.InvalidParams, `message.contextId: task ${entry.id} is of context ${entry.contextId}`))
        }
        if (Wire.isTerminal(entry.status.state)) {
          return yield* Effect.fail(
            new Wire.RpcError(Wire.ErrorCode.UnsupportedOperation, `Task ${entry.id} has ended (${entry.status.state}): send a new message in its context instead`)
          )
        }
        const follow = yield* self.follow(entry)
        yield* (entry.status.state === "TASK_STATE_INPUT_REQUIRED" ? self.answer(entry, message) : self.steer(entry, message)).pipe(
          Effect.onError(() => Effect.sync(follow.close))
        )
        // taken after what the message did (its events may be both in it and after it: the same states again)
        const task = self.snapshot(entry)
        return { task, events: follow.from(task), close: follow.close }
      }
      const contextId = message.contextId === undefined || message.contextId === "" ? randomUUID() : message.contextId
      const input = Wire.inputOf(message.parts)
      if (input.trim() === "") return yield* Effect.fail(new Wire.RpcError(Wire.ErrorCode.InvalidParams, "message.parts: no text to act on"))
      const options = yield* self.turnOptions(params)
      const active = yield* self.loop.activeTurn(contextId)
      // checked and taken with nothing in between: two messages for one new context start one task
      const busy = self.running.get(contextId)
      if (busy !== undefined || active !== undefined) {
        return yield* Effect.fail(
          new Wire.RpcError(
            Wire.ErrorCode.UnsupportedOperation,
            `Context ${contextId} has a running task${busy === undefined ? "" : ` (${busy.id})`}: send the message with its taskId (steering, or the answer to its approval), or cancel it first`
          )
        )
      }
      const id = randomUUID()
      const entry: Entry = {
        id,
        contextId,
        status: { state: "TASK_STATE_SUBMITTED", timestamp: new Date().toISOString() },
        history: [{ ...message, contextId, taskId: id }],
        artifacts: [],
        turnId: undefined,
        cancelRequested: false,
        pending: [],
        listeners: new Set(),
        ended: Deferred.makeUnsafe<void>()
      }
      self.tasks.set(entry.id, entry)
      self.running.set(contextId, entry)
      self.trim()
      const follow = yield* self.follow(entry)
      const task = self.snapshot(entry)
      yield* FiberSet.run(self.fibers, self.run(entry, input, options))
      return { task, events: follow.from(task), close: follow.close }
    })
  }

  private entryOf(id: string): Effect.Effect<Entry, Wire.RpcError> {
    return Effect.suspend(() => {
      const entry = this.tasks.get(id)
      return entry === undefined ? Effect.fail(new Wire.RpcError(Wire.ErrorCode.TaskNotFound, `Task not found: ${id}`)) : Effect.succeed(entry)
    })
  }

  /** The task now, with its newest `historyLength` messages (all when absent). */
  get(id: string, historyLength?: number): Effect.Effect<Wire.Task, Wire.RpcError> {
    return Effect.map(this.entryOf(id), (entry) => this.snapshot(entry, historyLength))
  }

  /** Follows a task until it ends or waits for the client (`SubscribeToTask`); an ended task cannot be followed. */
  subscribe(id: string): Effect.Effect<Stream.Stream<Wire.StreamEvent>, Wire.RpcError> {
    const self = this
    return Effect.gen(function*() {
      const entry = yield* self.entryOf(id)
      if (Wire.isTerminal(entry.status.state)) {
        return yield* Effect.fail(new Wire.RpcError(Wire.ErrorCode.UnsupportedOperation, `Task ${id} has ended (${entry.status.state})`))
      }
      return (yield* self.follow(entry)).from(self.snapshot(entry))
    })
  }

  /** Stops the task's turn now (the loop's stop-now interrupt) and answers once it ended `canceled`. */
  cancel(id: string): Effect.Effect<Wire.Task, Wire.RpcError> {
    const self = this
    return Effect.gen(function*() {
      const entry = yield* self.entryOf(id)
      if (Wire.isTerminal(entry.status.state)) {
        return yield* Effect.fail(new Wire.RpcError(Wire.ErrorCode.TaskNotCancelable, `Task not cancelable: ${id} has ended (${entry.status.state})`))
      }
      entry.cancelRequested = true
      // a turn not started yet is stopped as it starts (see `onEvent`)
      if (entry.turnId !== undefined) yield* Effect.ignore(self.loop.interruptNow(entry.contextId))
      yield* Effect.timeoutOption(Deferred.await(entry.ended), CANCEL_WAIT)
      return self.snapshot(entry)
    })
  }

  /**
   * A listener on the task's events, in place now. `from(task)` is the stream a client reads: the
   * task as it was when `task` was taken (after the listener was in place), then every event
   * after it, until the task ends or waits for the client.
   */
  private follow(entry: Entry) {
    return Effect.map(Queue.unbounded<Wire.StreamEvent, Cause.Done>(), (queue) => {
      const listener = (event: Wire.StreamEvent) => {
        Queue.offerUnsafe(queue, event)
        if ("statusUpdate" in event && Wire.isSettled(event.statusUpdate.status.state)) {
          entry.listeners.delete(listener)
          Queue.endUnsafe(queue)
        }
      }
      entry.listeners.add(listener)
      const close = () => void entry.listeners.delete(listener)
      const from = (task: Wire.Task): Stream.Stream<Wire.StreamEvent> => {
        const first = Stream.make({ task } as Wire.StreamEvent)
        return (Wire.isSettled(task.status.state) ? first : Stream.concat(first, Stream.fromQueue(queue))).pipe(Stream.ensuring(Effect.sync(close)))
      }
      return { close, from }
    })
  }

  /** Answers the approval the task waits on. */
  private answer(entry: Entry, message: Wire.Message): Effect.Effect<void, Wire.RpcError> {
    const waiting = entry.pending[0]!
    const decision = Wire.decisionOf(message.parts)
    if (decision === undefined || this.desk === undefined) {
      return Effect.fail(
        new Wire.RpcError(
          Wire.ErrorCode.InvalidParams,
          `message.parts: task ${entry.id} waits for approval of ${waiting.toolName}: answer with the text "approve" or "deny" (or a data part {"decision": "approve" | "deny"})`
        )
      )
    }
    const approval = decision.approvalId === undefined ? waiting : entry.pending.find((a) => a.id === decision.approvalId)
    if (approval === undefined) return Effect.fail(new Wire.RpcError(Wire.ErrorCode.InvalidParams, `approvalId: no approval ${decision.approvalId} waits in task ${entry.id}`))
    entry.history.push({ ...message, contextId: entry.contextId, taskId: entry.id })
    return this.desk.decide(approval.id, { decision: decision.decision, ...(decision.reason === undefined ? {} : { reason: decision.reason }) }).pipe(
      Effect.asVoid,
      Effect.mapError(() => new Wire.RpcError(Wire.ErrorCode.InvalidParams, `approval ${approval.id} was decided already`))
    )
  }

  /** Steering for the task's running turn: never dropped (joined to the turn, or run right after it). */
  private steer(entry: Entry, message: Wire.Message): Effect.Effect<void, Wire.RpcError> {
    const text = Wire.inputOf(message.parts)
    if (text.trim() === "") return Effect.fail(new Wire.RpcError(Wire.ErrorCode.InvalidParams, "message.parts: no text to steer with"))
    entry.history.push({ ...message, contextId: entry.contextId, taskId: entry.id })
    return this.loop.steer(entry.contextId, text).pipe(
      Effect.asVoid,
      Effect.mapError(() => new Wire.RpcError(Wire.ErrorCode.InternalError, "the turn holds as much steering as it may: send it again later"))
    )
  }

  /** A typed answer when the message asks for one: `metadata.outputSchema`, a JSON Schema. */
  private turnOptions(params: Wire.SendMessageParams): Effect.Effect<TurnOptions, Wire.RpcError> {
    const json = params.message.metadata?.["outputSchema"] ?? params.metadata?.["outputSchema"]
    if (json === undefined) return Effect.succeed({})
    if (this.outputSchema === undefined) return Effect.fail(new Wire.RpcError(Wire.ErrorCode.UnsupportedOperation, "typed answers (outputSchema) are not offered here"))
    return this.outputSchema(json).pipe(
      Effect.map((typed): TurnOptions => ({ output: typed.schema, outputJsonSchema: typed.jsonSchema })),
      Effect.mapError((why) => new Wire.RpcError(Wire.ErrorCode.InvalidParams, `metadata.outputSchema: ${why}`))
    )
  }

  /**
   * Runs the task's turn, its root events mapped to the task, then the steering that came too late
   * to join it (the result's follow-ups) as turns of the same task; ends the task with the last.
   */
  private run(entry: Entry, input: string, options: TurnOptions): Effect.Effect<void> {
    const self = this
    return Effect.gen(function*() {
      let result = yield* self.turn(entry, input, options)
      const later = [...result.followUps]
      while (later.length > 0 && !entry.cancelRequested) {
        result = yield* self.turn(entry, later.shift()!, options)
        later.push(...result.followUps)
      }
      self.finish(entry, result)
    }).pipe(
      Effect.onExit((exit) => Effect.sync(() => {
        if (Exit.isFailure(exit) && !Wire.isTerminal(entry.status.state)) self.end(entry, "TASK_STATE_FAILED", "the turn failed unexpectedly")
      }))
    )
  }

  /** One turn of the task, its root events mapped to the task while it runs. */
  private turn(entry: Entry, input: string, options: TurnOptions): Effect.Effect<TurnResult> {
    const self = this
    return Effect.scoped(Effect.gen(function*() {
      const subscription = yield* self.loop.subscribe({ strategy: "lossless" })
      const forward = yield* subscription.stream.pipe(
        Stream.filter((event) => event.sessionKey === entry.contextId && event.depth === 0),
        Stream.takeUntil((event) => event._tag === "TurnEnd"),
        Stream.runForEach((event) => self.onEvent(entry, event)),
        Effect.forkScoped
      )
      const result = yield* self.loop.turn(entry.contextId, input, options)
      // the turn's end event is published before its result returns; do not hang on one that never came
      yield* Effect.timeoutOption(Fiber.join(forward), Duration.seconds(5))
      return result
    }))
  }

  private onEvent(entry: Entry, event: AgentEvent): Effect.Effect<void> {
    if (event._tag === "TurnStart") {
      entry.turnId = event.turnId
      this.setStatus(entry, "TASK_STATE_WORKING")
      return entry.cancelRequested ? Effect.ignore(this.loop.interruptNow(entry.contextId)) : Effect.void
    }
    // each tool call as a working status: in words, and as data naming the call
    if (event._tag === "ToolExecStart" || event._tag === "ToolExecEnd") {
      const started = event._tag === "ToolExecStart"
      const call = { toolCallId: event.toolCallId, toolName: event.toolName }
      this.setStatus(
        entry,
        "TASK_STATE_WORKING",
        Wire.agentMessage(entry, [
          { text: started ? `running ${event.toolName}` : `${event.toolName} ${event.isError ? "failed" : "done"}` },
          { data: started ? { event: "tool_started", ...call, arguments: this.parsed(event.arguments) } : { event: "tool_ended", ...call, isError: event.isError } }
        ])
      )
    }
    return Effect.void
  }

  private finish(entry: Entry, result: TurnResult): void {
    if (Wire.isTerminal(entry.status.state)) return
    const text = this.scrub(result.finalMessage === undefined ? "" : messageText(result.finalMessage.content))
    switch (result.status) {
      case "completed": {
        const artifact: Wire.Artifact = {
          artifactId: `${entry.id}-answer`,
          name: "answer",
          description: "The turn's final answer",
          parts: [{ text, mediaType: "text/plain" }, ...(result.output === undefined ? [] : [{ data: result.output, mediaType: "application/json" }])]
        }
        entry.artifacts.push(artifact)
        this.emit(entry, { artifactUpdate: { taskId: entry.id, contextId: entry.contextId, artifact, lastChunk: true } })
        const answer = Wire.agentMessage(entry, [{ text }])
        entry.history.push(answer)
        return this.end(entry, "TASK_STATE_COMPLETED", undefined, answer)
      }
      case "interrupted":
      case "aborted":
        return this.end(entry, "TASK_STATE_CANCELED", entry.cancelRequested ? "canceled by the client" : `the turn was ${result.status}`)
      case "blocked":
        return this.end(entry, "TASK_STATE_REJECTED", this.scrub(result.error ?? "a hook blocked the turn"))
      default:
        return this.end(entry, "TASK_STATE_FAILED", this.scrub(result.error ?? `the turn ended ${result.status}`))
    }
  }

  private end(entry: Entry, state: Wire.TaskState, why: string | undefined, message?: Wire.Message): void {
    entry.pending.length = 0
    if (this.running.get(entry.contextId) === entry) this.running.delete(entry.contextId)
    this.setStatus(entry, state, message ?? (why === undefined ? undefined : Wire.agentMessage(entry, [{ text: why }])))
    Deferred.doneUnsafe(entry.ended, Exit.void)
  }

  private setStatus(entry: Entry, state: Wire.TaskState, message?: Wire.Message): void {
    entry.status = { state, timestamp: new Date().toISOString(), ...(message === undefined ? {} : { message }) }
    this.emit(entry, { statusUpdate: { taskId: entry.id, contextId: entry.contextId, status: entry.status } })
  }

  private emit(entry: Entry, event: Wire.StreamEvent): void {
    for (const listener of [...entry.listeners]) listener(event)
  }

  private parsed(args: string): unknown {
    const scrubbed = this.scrub(args)
    try {
      return JSON.parse(scrubbed)
    } catch {
      return scrubbed
    }
  }

  private snapshot(entry: Entry, historyLength?: number): Wire.Task {
    const history = historyLength === undefined ? entry.history : historyLength <= 0 ? [] : entry.history.slice(-historyLength)
    return {
      id: entry.id,
      contextId: entry.contextId,
      status: entry.status,
      ...(entry.artifacts.length === 0 ? {} : { artifacts: [...entry.artifacts] }),
      ...(history.length === 0 ? {} : { history: [...history] })
    }
  }

  /** Forgets the oldest ended tasks past the bound; running ones are always kept. */
  private trim(): void {
    if (this.tasks.size <= this.kept) return
    for (const [id, entry] of this.tasks) {
      if (this.tasks.size <= this.kept) return
      if (Wire.isTerminal(entry.status.state)) this.tasks.delete(id)
    }
  }
}
