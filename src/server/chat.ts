/**
 * `POST /v1/chat`: a session's turns as the AI SDK's UI message stream, for `useChat`.
 *
 * The body is what `useChat`'s default transport posts: the chat's `id` is the session key, and
 * of its messages only the last one is read (the server keeps the history). A user's message
 * starts a turn and streams it (`uiMessageStream.ts` says how events become chunks). When the
 * turn waits for approvals the stream ends; the page answers with `addToolApprovalResponse`, and
 * `useChat` (with `sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses`)
 * posts the assistant's message with the answers: they go to the pending approvals (the same
 * ones as `POST /v1/approvals/{id}`), and the stream goes on from where the last one stopped,
 * with nothing missed or sent twice (the server's event feed, read from the turn's cursor).
 */
import { randomUUID } from "node:crypto"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import type { AgentLoopShape } from "../services/AgentLoop.ts"
import { ApprovalNotFound, ChatRefused, SessionBusy } from "./Api.ts"
import type { Approvals } from "./approvals.ts"
import type { EventFeed, Frame } from "./eventFeed.ts"
import type { Turns } from "./turns.ts"
import { type ChatRequest, ChatTurn, frame, type UIMessageChunk, type UIMessagePart } from "./uiMessageStream.ts"

/** What the chat route needs of the server. */
export interface ChatDeps {
  readonly loop: AgentLoopShape
  readonly feed: EventFeed
  readonly approvals: Approvals
  readonly turns: Turns
  readonly clientBuffer: number
  readonly scrub: (text: string) => string
}

/** The headers the AI SDK's own servers send with the stream. */
export const UI_MESSAGE_STREAM_HEADERS = {
  "cache-control": "no-cache",
  "x-vercel-ai-ui-message-stream": "v1",
  "x-accel-buffering": "no"
}

/** Turns shown to a chat and not ended, kept for the stream that continues them. */
const KEPT_TURNS = 1000

const encoder = new TextEncoder()

/** The chat route's handler. */
export const makeChat = (deps: ChatDeps) => {
  const { approvals, feed, loop, turns } = deps
  const open = new Map<string, ChatTurn>()
  const keep = (turn: ChatTurn) => {
    if (turn.turnId === undefined || turn.ended) return
    open.delete(turn.turnId)
    open.set(turn.turnId, turn)
    for (const id of open.keys()) {
      if (open.size <= KEPT_TURNS) break
      open.delete(id)
    }
  }

  /** The turn's chunks from its cursor on, until it ends or waits for a person; then `[DONE]`. */
  const response = (turn: ChatTurn, start: UIMessageChunk) => {
    const read = (item: Frame): { readonly chunks: ReadonlyArray<UIMessageChunk>; readonly end: boolean } => {
      if (item._tag === "Gap") return { chunks: turn.lost(item.missed), end: true }
      if (!turn.concerns(item.item.event)) {
        turn.cursor = Math.max(turn.cursor, item.item.id)
        return { chunks: [], end: false }
      }
      const out = turn.read(item.item.event, item.item.id)
      keep(turn)
      if (turn.ended && turn.turnId !== undefined) open.delete(turn.turnId)
      return out
    }
    const chunks = feed.frames({ lastId: turn.cursor, buffer: deps.clientBuffer, filter: (event) => event.sessionKey === turn.sessionKey }).pipe(
      // one frame at a time: the turn reads no event past the one that ends this stream
      Stream.rechunk(1),
      Stream.map(read),
      Stream.takeUntil((out) => out.end),
      Stream.map((out) => out.chunks.map((chunk) => deps.scrub(frame(chunk))).join(""))
    )
    return HttpServerResponse.stream(
      Stream.make(frame(start)).pipe(
        Stream.concat(chunks),
        Stream.concat(Stream.make("data: [DONE]\n\n")),
        Stream.merge(Stream.tick("15 seconds").pipe(Stream.drop(1), Stream.map(() => ": keep-alive\n\n")), { haltStrategy: "left" }),
        Stream.filter((text) => text !== ""),
        Stream.map((text) => encoder.encode(text))
      ),
      { contentType: "text/event-stream", headers: UI_MESSAGE_STREAM_HEADERS }
    )
  }

  /** A user's message: a turn of its own, streamed from its start. */
  const startTurn = (sessionKey: string, text: string) =>
    Effect.gen(function*() {
      // the stream takes the session's next turn as its own: another one running or waiting would be taken instead
      if ((yield* loop.activeTurn(sessionKey)) !== undefined || turns.running(sessionKey)) {
        return yield* new SessionBusy({ sessionKey })
      }
      const turn = new ChatTurn({ sessionKey, cursor: feed.lastId })
      yield* turns.start(sessionKey, text)
      return response(turn, { type: "start", messageId: randomUUID() })
    })

  /** The assistant's message with approvals answered: the decisions, then the rest of the turn. */
  const continueTurn = (sessionKey: string, parts: ReadonlyArray<UIMessagePart>, answers: ReadonlyArray<UIMessagePart>) =>
    Effect.gen(function*() {
      const from = feed.lastId
      let turnId: string | undefined
      for (const part of answers) {
        const approval = approvals.get(part.approval!.id)
        if (approval === undefined || approval.sessionKey !== sessionKey) return yield* new ApprovalNotFound({ id: part.approval!.id })
        turnId ??= approval.turnId
        const decision = part.approval!.approved === true ? "allow" as const : "deny" as const
        const reason = part.approval!.reason
        // a decision made already (elsewhere, or the wait timed out) stands; the stream shows what it was
        yield* approvals.decide(approval.id, { decision, ...(reason === undefined ? {} : { reason }) }).pipe(
          Effect.catchTag("AlreadyDecided", () => Effect.void)
        )
      }
      const turn = open.get(turnId!) ??
        new ChatTurn({ sessionKey, turnId: turnId!, cursor: from, shown: parts.flatMap((part) => part.toolCallId === undefined ? [] : [part.toolCallId]) })
      turn.resume()
      for (const part of answers) turn.answered(part.toolCallId ?? "", part.approval!.approved === true)
      return response(turn, { type: "start" })
    })

  return (request: ChatRequest): Effect.Effect<HttpServerResponse.HttpServerResponse, ChatRefused | SessionBusy | ApprovalNotFound> =>
    Effect.suspend((): Effect.Effect<HttpServerResponse.HttpServerResponse, ChatRefused | SessionBusy | ApprovalNotFound> => {
      const last = request.messages.at(-1)
      if (request.trigger === "regenerate-message") {
        return Effect.fail(new ChatRefused({ message: "regenerate is not supported: the session's history is kept by the server" }))
      }
      if (last?.role === "user") {
        const text = last.parts.flatMap((part) => part.type === "text" && part.text !== undefined ? [part.text] : []).join("\n")
        if (text.trim() === "") return Effect.fail(new ChatRefused({ message: "the last message has no text" }))
        return startTurn(request.id, text)
      }
      const answers = last?.role === "assistant"
        ? last.parts.filter((part) => part.state === "approval-responded" && part.approval?.approved !== undefined)
        : []
      if (last === undefined || answers.length === 0) {
        return Effect.fail(new ChatRefused({ message: "nothing to do: the last message is neither a user's nor the assistant's with approvals answered" }))
      }
      return continueTurn(request.id, last.parts, answers)
    })
}
