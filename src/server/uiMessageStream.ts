/**
 * The AI SDK's UI message stream (the protocol `useChat` from `@ai-sdk/react` reads), written with
 * our own Schemas: the chunks the server sends, the body `useChat`'s transport posts, and the
 * translation of one turn's events into chunks.
 *
 * A turn maps onto one assistant message: each model call is a step (`start-step`, `finish-step`),
 * its text and reasoning are parts streamed as deltas, each tool call is a dynamic tool part
 * (shown when it starts, or when it asks for approval) that ends with its output, its error, or
 * its denial. A call that waits for a person becomes a `tool-approval-request`, and the stream
 * ends there (`finish`): the page answers with `addToolApprovalResponse`, `useChat` posts the
 * messages again, and the next stream continues the same message from where this one stopped.
 */
import * as Schema from "effect/Schema"
import type { AgentEvent } from "../domain/Event.ts"
import type { FeedEvent } from "./eventFeed.ts"

const chunk = <T extends string, F extends Schema.Struct.Fields>(type: T, fields: F) =>
  Schema.Struct({ type: Schema.Literal(type), ...fields })

/** One chunk of the UI message stream: the kinds this server sends, as the AI SDK names them. */
export const UIMessageChunk = Schema.Union([
  chunk("start", { messageId: Schema.optionalKey(Schema.String) }),
  chunk("start-step", {}),
  chunk("text-start", { id: Schema.String }),
  chunk("text-delta", { id: Schema.String, delta: Schema.String }),
  chunk("text-end", { id: Schema.String }),
  chunk("reasoning-start", { id: Schema.String }),
  chunk("reasoning-delta", { id: Schema.String, delta: Schema.String }),
  chunk("reasoning-end", { id: Schema.String }),
  chunk("tool-input-available", { toolCallId: Schema.String, toolName: Schema.String, input: Schema.Unknown, dynamic: Schema.Literal(true) }),
  chunk("tool-approval-request", { approvalId: Schema.String, toolCallId: Schema.String }),
  chunk("tool-output-available", { toolCallId: Schema.String, output: Schema.Unknown, dynamic: Schema.Literal(true) }),
  chunk("tool-output-error", { toolCallId: Schema.String, errorText: Schema.String, dynamic: Schema.Literal(true) }),
  chunk("tool-output-denied", { toolCallId: Schema.String }),
  chunk("finish-step", {}),
  chunk("finish", {
    finishReason: Schema.Literals(["stop", "length", "tool-calls", "error", "other"]),
    messageMetadata: Schema.optionalKey(Schema.Struct({ turnId: Schema.String, status: Schema.optionalKey(Schema.String) }))
  }),
  chunk("error", { errorText: Schema.String })
]).annotate({ identifier: "UIMessageChunk", description: "A chunk of the AI SDK's UI message stream (protocol v1)." })
export type UIMessageChunk = typeof UIMessageChunk.Type

/** A part of a message as `useChat` sends it back: only what the server reads is declared. */
export const UIMessagePart = Schema.Struct({
  type: Schema.String,
  text: Schema.optionalKey(Schema.String),
  toolCallId: Schema.optionalKey(Schema.String),
  state: Schema.optionalKey(Schema.String),
  approval: Schema.optionalKey(Schema.Struct({
    id: Schema.String,
    approved: Schema.optionalKey(Schema.Boolean),
    reason: Schema.optionalKey(Schema.String)
  }))
})
export type UIMessagePart = typeof UIMessagePart.Type

/** A message as `useChat` sends it. */
export const UIMessage = Schema.Struct({
  id: Schema.String,
  role: Schema.Literals(["system", "user", "assistant"]),
  parts: Schema.Array(UIMessagePart)
})

/**
 * What `useChat`'s default transport posts: the chat's `id` (the session key), its messages, and
 * why it sends them. The server keeps the session's history itself, so only the last message is
 * read: a user's message starts a turn; the assistant's, with approvals answered, continues one.
 */
export const ChatRequest = Schema.Struct({
  id: Schema.NonEmptyString,
  messages: Schema.Array(UIMessage),
  trigger: Schema.optionalKey(Schema.Literals(["submit-message", "regenerate-message"])),
  messageId: Schema.optionalKey(Schema.String)
})
export type ChatRequest = typeof ChatRequest.Type

/** A chunk as one SSE frame. */
export const frame = (value: UIMessageChunk): string => `data: ${JSON.stringify(Schema.encodeSync(UIMessageChunk)(value))}\n\n`

/** What a turn's status makes of the stream's finish reason. */
const finishReason = (status: string): "stop" | "length" | "error" | "other" =>
  status === "completed" ? "stop" : status === "max_iterations" ? "length" : status === "failed" ? "error" : "other"

const parsed = (json: string): unknown => {
  try {
    return JSON.parse(json)
  } catch {
    return json
  }
}

/**
 * One turn as UI message chunks, across the streams that show it: a turn that waits for approval
 * is shown by one stream up to the request and by the next from there. What the turn has shown
 * (tool calls, approvals, the last feed event read) lasts for the turn; the open text and
 * reasoning parts and the step last for one stream.
 */
export class ChatTurn {
  /** The loop's id of the turn, once its `TurnStart` was read. */
  turnId: string | undefined
  /** The feed id of the last event read. */
  cursor: number
  /** The turn ended. */
  ended = false
  readonly sessionKey: string
  /** The model's calls, by id, from its responses: what a call that never starts is shown with. */
  private readonly calls = new Map<string, { readonly name: string; readonly input: unknown }>()
  private readonly shown = new Set<string>()
  private readonly running = new Set<string>()
  private readonly denied = new Set<string>()
  /** Approvals waiting for a decision, by tool call id. */
  private readonly pending = new Map<string, string>()
  /** Approval events read before the turn's `TurnStart`: maybe this turn's. */
  private readonly early: Array<FeedEvent> = []
  /** Approval requests read before the response with their call: shown after it, in the message's order. */
  private readonly held: Array<Extract<FeedEvent, { _tag: "ApprovalRequested" }>> = []
  private next = 0
  private text: string | undefined
  private reasoning: string | undefined
  private step = false

  constructor(options: { readonly sessionKey: string; readonly cursor: number; readonly turnId?: string; readonly shown?: Iterable<string> }) {
    this.sessionKey = options.sessionKey
    this.cursor = options.cursor
    this.turnId = options.turnId
    for (const id of options.shown ?? []) this.shown.add(id)
  }

  /** A new stream of the turn: nothing of the last stream's parts is open. */
  resume(): void {
    this.text = undefined
    this.reasoning = undefined
    this.step = false
  }

  /** The page answered an approval (its decision was just given): the call no longer waits. */
  answered(toolCallId: string, approved: boolean): void {
    this.pending.delete(toolCallId)
    if (!approved) this.denied.add(toolCallId)
  }

  /** Whether an event is this turn's (a turn not yet started takes the session's next top-level one). */
  concerns(event: FeedEvent): boolean {
    if (event.sessionKey !== this.sessionKey) return false
    // the server's approval events are not ordered with the loop's: one may come before its TurnStart
    if (this.turnId === undefined) return (event._tag === "TurnStart" && event.depth === 0) || event._tag.startsWith("Approval")
    return event.turnId === this.turnId && ("depth" in event ? event.depth === 0 : true)
  }

  /** The chunks of one of the turn's events, and whether the stream ends after them. */
  read(event: FeedEvent, id: number): { readonly chunks: ReadonlyArray<UIMessageChunk>; readonly end: boolean } {
    this.cursor = Math.max(this.cursor, id)
    if (this.turnId === undefined && event._tag !== "TurnStart") {
      this.early.push(event)
      return { chunks: [], end: false }
    }
    const out: Array<UIMessageChunk> = []
    switch (event._tag) {
      case "TurnStart": {
        this.turnId = event.turnId
        const early = this.early.splice(0).filter((e) => e.turnId === event.turnId)
        for (const e of early) out.push(...this.read(e, id).chunks)
        break
      }
      case "LLMRequest":
        this.closeParts(out)
        if (this.step) out.push({ type: "finish-step" })
        out.push({ type: "start-step" })
        this.step = true
        break
      case "LLMDelta":
        if (event.kind === "text") this.delta(out, "text", event.text)
        else if (event.kind === "reasoning") this.delta(out, "reasoning", event.text)
        break
      case "LLMResponse":
        this.closeParts(out)
        for (const call of event.toolCalls) this.calls.set(call.id, { name: call.name, input: parsed(call.arguments) })
        for (const request of this.held.splice(0)) this.approvalRequested(out, request)
        break
      case "ToolExecStart":
        this.closeParts(out)
        this.show(out, event.toolCallId, event.toolName, parsed(event.arguments))
        this.running.add(event.toolCallId)
        break
      case "ToolExecEnd":
        this.show(out, event.toolCallId, event.toolName, undefined)
        this.running.delete(event.toolCallId)
        out.push(
          event.isError
            ? { type: "tool-output-error", toolCallId: event.toolCallId, errorText: event.result, dynamic: true }
            : { type: "tool-output-available", toolCallId: event.toolCallId, output: event.result, dynamic: true }
        )
        break
      case "ToolExecSkipped":
        this.closeParts(out)
        this.show(out, event.toolCallId, event.toolName, undefined)
        out.push(
          this.denied.has(event.toolCallId)
            ? { type: "tool-output-denied", toolCallId: event.toolCallId }
            : { type: "tool-output-error", toolCallId: event.toolCallId, errorText: event.reason, dynamic: true }
        )
        break
      case "ApprovalRequested":
        if (this.calls.has(event.approval.toolCallId)) this.approvalRequested(out, event)
        else this.held.push(event)
        break
      case "ApprovalResolved":
        this.pending.delete(event.approval.toolCallId)
        if (event.approval.status !== "allow") this.denied.add(event.approval.toolCallId)
        break
      case "TurnEnd":
        return { chunks: this.end(out, event), end: true }
    }
    // the page can answer only once nothing else of the turn is under way: every call it shows has
    // ended or waits for a decision (a call still running would keep `useChat` from sending)
    const waiting = this.pending.size > 0 && this.running.size === 0 && this.held.length === 0
    if (waiting) {
      this.closeParts(out)
      if (this.step) out.push({ type: "finish-step" })
      this.step = false
      out.push({ type: "finish", finishReason: "tool-calls", messageMetadata: { turnId: this.turnId ?? "" } })
    }
    return { chunks: out, end: waiting }
  }

  /** The chunks that end a stream cut short: what the client missed, said as an error. */
  lost(missed: number): ReadonlyArray<UIMessageChunk> {
    const out: Array<UIMessageChunk> = []
    this.closeParts(out)
    out.push({ type: "error", errorText: `${missed} events of the turn were lost; read the session's history (GET /v1/sessions/${this.sessionKey})` })
    out.push({ type: "finish", finishReason: "error", ...(this.turnId === undefined ? {} : { messageMetadata: { turnId: this.turnId } }) })
    return out
  }

  private end(out: Array<UIMessageChunk>, event: Extract<AgentEvent, { _tag: "TurnEnd" }>): ReadonlyArray<UIMessageChunk> {
    this.ended = true
    this.closeParts(out)
    if (this.step) out.push({ type: "finish-step" })
    this.step = false
    if (event.error !== undefined) out.push({ type: "error", errorText: event.error })
    out.push({ type: "finish", finishReason: finishReason(event.status), messageMetadata: { turnId: event.turnId, status: event.status } })
    return out
  }

  private approvalRequested(out: Array<UIMessageChunk>, event: Extract<FeedEvent, { _tag: "ApprovalRequested" }>): void {
    const { approval } = event
    if (approval.status !== "pending") return
    this.closeParts(out)
    this.show(out, approval.toolCallId, approval.toolName, approval.arguments)
    this.pending.set(approval.toolCallId, approval.id)
    out.push({ type: "tool-approval-request", approvalId: approval.id, toolCallId: approval.toolCallId })
  }

  /** The call's part, once: with its input as the model (or the hooks) gave it. */
  private show(out: Array<UIMessageChunk>, toolCallId: string, toolName: string, input: unknown): void {
    if (this.shown.has(toolCallId)) return
    this.shown.add(toolCallId)
    out.push({ type: "tool-input-available", toolCallId, toolName, input: input ?? this.calls.get(toolCallId)?.input ?? {}, dynamic: true })
  }

  private delta(out: Array<UIMessageChunk>, kind: "text" | "reasoning", delta: string): void {
    if (delta === "") return
    const other = kind === "text" ? this.reasoning : this.text
    if (other !== undefined) {
      out.push({ type: kind === "text" ? "reasoning-end" : "text-end", id: other })
      if (kind === "text") this.reasoning = undefined
      else this.text = undefined
    }
    let id = kind === "text" ? this.text : this.reasoning
    if (id === undefined) {
      id = `${kind}-${this.next++}`
      out.push({ type: kind === "text" ? "text-start" : "reasoning-start", id })
      if (kind === "text") this.text = id
      else this.reasoning = id
    }
    out.push({ type: kind === "text" ? "text-delta" : "reasoning-delta", id, delta })
  }

  private closeParts(out: Array<UIMessageChunk>): void {
    if (this.reasoning !== undefined) out.push({ type: "reasoning-end", id: this.reasoning })
    if (this.text !== undefined) out.push({ type: "text-end", id: this.text })
    this.reasoning = undefined
    this.text = undefined
  }
}
