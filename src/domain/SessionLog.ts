/**
 * The session log (DESIGN §8): everything a session store keeps, append-only.
 *
 * The loop never deletes a stored message. Dropping old context (a provider overflow, the rune
 * budget) or summarising appends a `Compaction` record instead, and `view` folds the log into the
 * context a turn starts from. So the whole conversation stays readable (`SessionStore.log`), a
 * recovery that went wrong loses nothing, and a record appended by one writer cannot erase what
 * another appended.
 *
 * @example
 * ```ts
 * import { Message, SessionLog } from "effect-agent-loop"
 * const log: ReadonlyArray<SessionLog.SessionEntry> = [
 *   Message.user("u1"), Message.assistant("a1"), Message.user("u2"),
 *   { role: "compaction", reason: "overflow", cut: 2 }
 * ]
 * SessionLog.view(log) // [Message.user("u2")]
 * ```
 */
import * as Duration from "effect/Duration"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Message from "./Message.ts"
import { TurnStatus } from "./Turn.ts"
import { Usage } from "./Usage.ts"

/** How long a summary's provider call may take before it is given up (history kept). */
export const SUMMARY_TIMEOUT: Duration.Duration = Duration.minutes(2)

/** The first line of the system message a `summary` record stands for in the view. */
export const SUMMARY_PREFIX = "[Summary of the earlier conversation]"

/** The content of the error result `view` gives a tool call whose result was never stored. */
export const INTERRUPTED_RESULT = "Interrupted before the result was saved."

/** A compaction record: where the context now starts, and the summary if any. */
export const Compaction = Schema.Struct({
  role: Schema.Literal("compaction"),
  /** `overflow`: the provider said the context was too long; `budget`: over the rune budget; `summary`: summarised. */
  reason: Schema.Literals(["overflow", "budget", "summary"]),
  /** An index into the view as folded up to this record (see `view`). */
  cut: Schema.Natural,
  /** The summary of everything before `cut` (reason `summary`). */
  summary: Schema.optionalKey(Schema.String)
})
export type Compaction = typeof Compaction.Type

/**
 * A metadata record: facts about the session that are not part of the conversation, such as the
 * workspace it was started in (so a CLI can continue "the last session here"). `view` skips it;
 * logs written before it existed simply have none.
 */
export const Meta = Schema.Struct({
  role: Schema.Literal("meta"),
  /** The absolute path of the directory the session was started in. */
  workspace: Schema.optionalKey(Schema.String)
})
export type Meta = typeof Meta.Type

/**
 * A turn-outcome record: how a turn ended, appended when it ends, whatever its status. A turn whose
 * messages were rolled back (a hard abort, a failure before anything was kept) still gets one, so
 * the log says that the turn happened and why it left nothing. `view` skips it: the conversation
 * sent to models is unchanged. The error is scrubbed of known secrets before it is stored.
 */
export const TurnOutcome = Schema.Struct({
  role: Schema.Literal("outcome"),
  turnId: Schema.String,
  /** As `TurnResult.status`. */
  status: TurnStatus,
  /** The model the turn was run with. */
  model: Schema.optionalKey(Schema.String),
  /** When the turn started and ended (epoch milliseconds, from the Clock). */
  startedAt: Schema.Number,
  endedAt: Schema.Number,
  /** As `TurnResult.iterations`. */
  iterations: Schema.Number,
  /** The turn's tokens; `usage.costUsd` when the model's price is known. */
  usage: Usage,
  /** Why the turn did not complete: the failure's tag (`ProviderRejected`, …) and its message with its cause. */
  error: Schema.optionalKey(Schema.Struct({ _tag: Schema.String, message: Schema.String }))
})
export type TurnOutcome = typeof TurnOutcome.Type

/**
 * A rewind record: the view goes back to its first `cut` messages (as folded up to this record,
 * like a compaction's `cut`), so the conversation continues from before a chosen user message.
 * Every message after that point stays in the log, as an abandoned branch: nothing is deleted, and
 * `SessionStore.log` still shows it. See `rewindTo`.
 */
export const Rewind = Schema.Struct({
  role: Schema.Literal("rewind"),
  /** How many messages of the view are kept: the index of the user message rewound to. */
  cut: Schema.Natural,
  /** When it was rewound (epoch milliseconds), when the writer knew. */
  at: Schema.optionalKey(Schema.Number)
})
export type Rewind = typeof Rewind.Type

/**
 * One line of the log: a message, or a record (compaction, metadata, turn outcome, rewind).
 * Discriminated by `role`. Logs written before a record kind existed simply have none of it.
 */
export const SessionEntry = Schema.Union([...Message.Message.members, Compaction, Meta, TurnOutcome, Rewind])
export type SessionEntry = typeof SessionEntry.Type

/** Whether an entry is a compaction record. */
export const isCompaction = (entry: SessionEntry): entry is Compaction => entry.role === "compaction"

/** Whether an entry is a record whose `cut` indexes the view (a compaction or a rewind). */
const isIndexed = (entry: SessionEntry): entry is Compaction | Rewind => entry.role === "compaction" || entry.role === "rewind"

/** Whether an entry is a message (not a record). */
export const isMessage = (entry: SessionEntry): entry is Message.Message =>
  entry.role !== "compaction" && entry.role !== "meta" && entry.role !== "outcome" && entry.role !== "rewind"

/** Whether an entry is a turn-outcome record. */
export const isOutcome = (entry: SessionEntry): entry is TurnOutcome => entry.role === "outcome"

/**
 * Repair: every assistant tool call without a result gets an error result `INTERRUPTED_RESULT`,
 * placed right after that message's existing results (the tool messages that follow it), so a
 * log torn by a crash between a call and its result still gives providers a well-formed
 * conversation. Returns a new array; the input is not changed.
 */
export const repair = (messages: ReadonlyArray<Message.Message>): Array<Message.Message> => {
  const out: Array<Message.Message> = []
  let open: ReadonlyArray<Message.ToolCall> = []
  const answered = new Set<string>()
  const close = () => {
    for (const call of open) if (!answered.has(call.id)) out.push(Message.toolResult(call, INTERRUPTED_RESULT, true))
    open = []
    answered.clear()
  }
  for (const message of messages) {
    if (message.role === "tool") answered.add(message.toolCallId)
    else if (open.length > 0) close()
    out.push(message)
    if (message.role === "assistant" && message.toolCalls !== undefined) {
      open = message.toolCalls
      answered.clear()
    }
  }
  close()
  return out
}

/**
 * One step of the fold, for stores that keep a folded state and apply entries as they arrive.
 * A message is appended (to `state` itself, which is returned). A record applies to the view up to
 * it, `repair(state)`: `overflow`/`budget` keep the system messages before `cut` and everything
 * from `cut` on; `summary` replaces everything before `cut` with one system message,
 * `SUMMARY_PREFIX + "\n" + summary`; a rewind keeps the first `cut` messages. A `cut` past the end
 * counts as the end. Records return a new array. Metadata and turn-outcome records change nothing.
 */
export const foldEntry = (state: Array<Message.Message>, entry: SessionEntry): Array<Message.Message> => {
  if (entry.role === "meta" || entry.role === "outcome") return state
  if (!isIndexed(entry)) {
    state.push(entry)
    return state
  }
  const before = repair(state)
  const cut = Math.min(entry.cut, before.length)
  if (entry.role === "rewind") return before.slice(0, cut)
  const kept = before.slice(cut)
  if (entry.reason === "summary") return [Message.system(`${SUMMARY_PREFIX}\n${entry.summary ?? ""}`), ...kept]
  const systems = before.slice(0, cut).filter((message) => message.role === "system")
  return [...systems, ...kept]
}

/** The context a turn starts from: the entries folded (see `foldEntry`), then repaired. */
export const view = (entries: ReadonlyArray<SessionEntry>): ReadonlyArray<Message.Message> => {
  let state: Array<Message.Message> = []
  for (const entry of entries) state = foldEntry(state, entry)
  return repair(state)
}

/**
 * How `SessionStore.list` describes a log: its messages (records not counted, abandoned branches
 * counted: they are stored), its turns, a preview (the first prompt), the workspace of its first
 * metadata record that names one, and the status of its last turn-outcome record.
 * A turn opens with user messages in a row: what `beforeTurn` hooks added (a UserPromptSubmit
 * hook's context), then the user's own input, last; so a row counts as one turn, and the preview
 * is the last message of the first row. (Steering, arriving after the model spoke, opens a row too.)
 */
export const describe = (
  entries: ReadonlyArray<SessionEntry>
): {
  readonly messages: number
  readonly turns: number
  readonly preview?: string
  readonly workspace?: string
  readonly status?: TurnStatus
} => {
  let messages = 0
  let turns = 0
  let preview: string | undefined
  let workspace: string | undefined
  let status: TurnStatus | undefined
  let first: Message.Message | undefined
  let inRow = false
  for (const entry of entries) {
    if (entry.role === "meta") {
      workspace ??= entry.workspace
      continue
    }
    if (entry.role === "outcome") {
      status = entry.status
      // a turn's record ends its row: a turn that stored only its input is a turn of its own
      inRow = false
      continue
    }
    if (entry.role === "compaction" || entry.role === "rewind") continue
    messages++
    if (entry.role === "user" && !inRow) turns++
    // the first row's last message: kept until a message of another role ends the row
    if (entry.role === "user" && turns === 1) first = entry
    inRow = entry.role === "user"
  }
  if (first !== undefined) preview = previewOf(Message.textOf(first.content))
  return {
    messages,
    turns,
    ...(preview === undefined ? {} : { preview }),
    ...(workspace === undefined ? {} : { workspace }),
    ...(status === undefined ? {} : { status })
  }
}

const PREVIEW_LENGTH = 120

/** One line of at most `PREVIEW_LENGTH` characters: whitespace runs become one space. */
const previewOf = (text: string): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length > PREVIEW_LENGTH ? `${flat.slice(0, PREVIEW_LENGTH - 1)}…` : flat
}

/**
 * Entries a writer built against a view of `baseLength` messages, made safe to append after
 * `foreign` entries another writer appended in the meantime. Messages and turn-outcome records are
 * never touched; "compaction record" below means any record whose `cut` indexes the view (a
 * compaction or a rewind). When the foreign entries are all messages, the first compaction record's `cut` is kept within the base
 * (`min(cut, baseLength)`), so what the other writer appended stays in the view, and any later record
 * of the batch is dropped (it would index a view this writer never saw). When they hold a
 * compaction record themselves, or the base is unknown (`undefined`: the log was replaced), the
 * base the cuts index no longer exists, and the batch's records are dropped: the next overflow or
 * budget check compacts again, from the real context. Returns `entries` itself when nothing changes.
 */
export const rebase = (
  entries: ReadonlyArray<SessionEntry>,
  baseLength: number | undefined,
  foreign: ReadonlyArray<SessionEntry>
): ReadonlyArray<SessionEntry> => {
  if (!entries.some(isIndexed) || (baseLength !== undefined && foreign.length === 0)) return entries
  const stale = baseLength === undefined || foreign.some(isIndexed)
  let rebased = false
  return entries.flatMap((entry): ReadonlyArray<SessionEntry> => {
    if (!isIndexed(entry)) return [entry]
    if (stale || rebased) return []
    rebased = true
    return [{ ...entry, cut: Math.min(entry.cut, baseLength) }]
  })
}

/**
 * The rewind record that makes the view continue from before its `toUserMessage`-th user message
 * (0 is the first user message of the current view, `view(entries)`), or, as a failure, why there
 * is none. Only a user message of the view can be rewound to: messages dropped by compaction are
 * not in it.
 */
export const rewindTo = (
  entries: ReadonlyArray<SessionEntry>,
  toUserMessage: number,
  at?: number
): Result.Result<Rewind, string> => {
  const messages = view(entries)
  let seen = 0
  for (let i = 0; i < messages.length; i++) {
    if (messages[i]!.role !== "user") continue
    if (seen === toUserMessage) return Result.succeed({ role: "rewind", cut: i, ...(at === undefined ? {} : { at }) })
    seen++
  }
  return Result.fail(`no user message ${toUserMessage} to rewind to: the session's view holds ${seen} user message${seen === 1 ? "" : "s"}`)
}

/** The turn-outcome records of a log, in order: one per turn that ended (none in logs written before they existed). */
export const outcomes = (entries: ReadonlyArray<SessionEntry>): ReadonlyArray<TurnOutcome> => entries.filter(isOutcome)
