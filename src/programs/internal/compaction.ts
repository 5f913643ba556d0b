/**
 * Dropping old messages to fit the context (DESIGN §6 step 3 and §8).
 *
 * The conversation is cut into units: an assistant message with tool calls together with the
 * results that follow it, or any other single message. Only whole units are dropped, so a tool
 * call never loses its result (or the reverse). System messages and the newest user input are
 * never dropped, and neither is anything after that input: it is the work of the current turn.
 * What is kept starts with a user message whenever the conversation has one.
 */
import { type Content, type ContentPart, type Message, runes } from "../../domain/Message.ts"

/** The outcome of a compression: what is kept and how many messages went. */
export interface Compression {
  readonly kept: ReadonlyArray<Message>
  readonly dropped: number
  /** Where the dropped messages were in the input, so a caller can tell how many came before an index. */
  readonly droppedAt: ReadonlyArray<number>
}

const unchanged = (messages: ReadonlyArray<Message>): Compression => ({ kept: messages, dropped: 0, droppedAt: [] })

interface Unit {
  readonly start: number
  readonly end: number
  readonly pinned: boolean
}

const newestUserIndex = (messages: ReadonlyArray<Message>): number => {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role === "user") return i
  return -1
}

/** Cuts messages into units; units at or after the newest user input are pinned. */
const unitsOf = (messages: ReadonlyArray<Message>): ReadonlyArray<Unit> => {
  const protectFrom = newestUserIndex(messages)
  const units: Array<Unit> = []
  let i = 0
  while (i < messages.length) {
    const start = i
    const message = messages[i]!
    i++
    if (message.role === "assistant" && (message.toolCalls?.length ?? 0) > 0) {
      while (i < messages.length && messages[i]!.role === "tool") i++
    } else if (message.role === "tool") {
      while (i < messages.length && messages[i]!.role === "tool") i++
    }
    const pinned = message.role === "system" || (protectFrom >= 0 && start >= protectFrom)
    units.push({ start, end: i, pinned })
  }
  return units
}

/**
 * Drops units from the oldest while `shouldDrop` says so; then, once anything went, also the
 * assistant and tool units up to the next user message, so the kept conversation starts with a
 * user turn (some APIs, Anthropic's among them, reject a conversation that starts otherwise).
 */
const dropUnits = (messages: ReadonlyArray<Message>, shouldDrop: (unit: Unit, droppedSoFar: number) => boolean): Compression => {
  const kept: Array<Message> = []
  const droppedAt: Array<number> = []
  const hasUser = newestUserIndex(messages) >= 0
  let dropping = true
  for (const unit of unitsOf(messages)) {
    const beforeUserTurn = hasUser && droppedAt.length > 0 && messages[unit.start]!.role !== "user"
    if (!unit.pinned && dropping && (shouldDrop(unit, droppedAt.length) || beforeUserTurn)) {
      for (let i = unit.start; i < unit.end; i++) droppedAt.push(i)
      continue
    }
    if (!unit.pinned) dropping = false
    kept.push(...messages.slice(unit.start, unit.end))
  }
  return { kept, dropped: droppedAt.length, droppedAt }
}

/** Drops the oldest half of the droppable messages (at least one unit when any is droppable). */
export const dropOldestHalf = (messages: ReadonlyArray<Message>): Compression => {
  const droppable = unitsOf(messages).filter((u) => !u.pinned).reduce((n, u) => n + u.end - u.start, 0)
  const target = Math.max(1, Math.ceil(droppable / 2))
  return dropUnits(messages, (_, droppedSoFar) => droppedSoFar < target)
}

/** The size of messages in runes. */
export const runesOf = (messages: ReadonlyArray<Message>): number => messages.reduce((n, m) => n + runes(m), 0)

/** Drops the oldest droppable units until the messages fit `budget` runes (or nothing more can go). */
export const fitToBudget = (messages: ReadonlyArray<Message>, budget: number): Compression => {
  let excess = runesOf(messages) - budget
  if (excess <= 0) return unchanged(messages)
  return dropUnits(messages, (unit) => {
    if (excess <= 0) return false
    excess -= runesOf(messages.slice(unit.start, unit.end))
    return true
  })
}

/** Drops the oldest droppable units until at most `max` messages remain (or nothing more can go). */
export const fitToCount = (messages: ReadonlyArray<Message>, max: number): Compression => {
  let excess = messages.length - max
  if (excess <= 0) return unchanged(messages)
  return dropUnits(messages, (unit) => {
    if (excess <= 0) return false
    excess -= unit.end - unit.start
    return true
  })
}

/**
 * Splits a history for summarisation: the older part to summarise and the newest part to keep
 * (at least `keep` messages), never separating a tool call from its results.
 */
export const splitForSummary = (
  messages: ReadonlyArray<Message>,
  keep: number
): { readonly older: ReadonlyArray<Message>; readonly newer: ReadonlyArray<Message> } => {
  let cut = Math.max(0, messages.length - keep)
  while (cut > 0 && messages[cut]?.role === "tool") cut--
  return { older: messages.slice(0, cut), newer: messages.slice(cut) }
}

/** A conversation whose newest tool result was cut. */
export interface Shrink {
  readonly kept: ReadonlyArray<Message>
  /** Characters removed. */
  readonly cut: number
}

/** The index of the newest tool result, or -1. */
const newestToolResult = (messages: ReadonlyArray<Message>): number => {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role === "tool") return i
  return -1
}

/** The characters of content's text (images are not cut, so they do not count here). */
const textLength = (content: Content): number =>
  typeof content === "string" ? content.length : content.reduce((n, part) => n + (part.type === "text" ? part.text.length : 0), 0)

/** `text` cut to at most `max` characters, never ending on the first half of a surrogate pair. */
const head = (text: string, max: number): string =>
  text.length <= max ? text : text.slice(0, /[\uD800-\uDBFF]/.test(text.charAt(max - 1)) ? max - 1 : max)

/**
 * Content whose text keeps its first `maxRunes` characters: a string is cut; of parts, text parts
 * are kept in order until the allowance is spent (images stay where they were), then the note.
 */
const cutContent = (content: Content, maxRunes: number, note: (cut: number, total: number) => string): Content => {
  const total = textLength(content)
  if (typeof content === "string") {
    const kept = head(content, maxRunes)
    return `${kept}\n${note(total - kept.length, total)}`
  }
  let left = maxRunes
  const parts: Array<ContentPart> = []
  for (const part of content) {
    if (part.type !== "text") parts.push(part)
    else if (left > 0) {
      const kept = head(part.text, left)
      left -= kept.length
      parts.push({ type: "text", text: kept })
    }
  }
  const kept = maxRunes - left
  return [...parts, { type: "text", text: note(total - kept, total) }]
}

/**
 * The newest tool result's text cut to `maxRunes` characters, with a note saying how much went. It
 * is what compression can never drop (it is the work of the current turn), so an oversized one
 * would otherwise fail the turn on every retry. `undefined` when its text is not longer than that,
 * or there is none.
 */
export const shrinkNewestToolResult = (messages: ReadonlyArray<Message>, maxRunes: number): Shrink | undefined => {
  const index = newestToolResult(messages)
  const message = messages[index]
  if (message === undefined || message.role !== "tool") return undefined
  const total = textLength(message.content)
  if (total <= maxRunes) return undefined
  let cut = 0
  const content = cutContent(message.content, maxRunes, (removed, of) => {
    cut = removed
    return `[tool result cut by ${removed} of ${of} characters to fit the context window]`
  })
  return { kept: messages.map((m, i) => i === index ? { ...message, content } : m), cut }
}

/**
 * What overflow recovery tries first: a newest tool result longer than a quarter of the window (at
 * 4 characters per token) is cut to that. `undefined` when there is none so large.
 */
export const shrinkOversizedToolResult = (messages: ReadonlyArray<Message>, contextWindow: number): Shrink | undefined =>
  shrinkNewestToolResult(messages, contextWindow)

/** The smallest tool result overflow recovery still halves: below this, halving gains nothing. */
const MIN_HALVED_RUNES = 2000

/** What overflow recovery tries when nothing else can be dropped: the newest tool result halved. */
export const halveNewestToolResult = (messages: ReadonlyArray<Message>): Shrink | undefined => {
  const newest = messages[newestToolResult(messages)]
  const runes = newest?.role === "tool" ? textLength(newest.content) : 0
  return runes < MIN_HALVED_RUNES ? undefined : shrinkNewestToolResult(messages, Math.floor(runes / 2))
}
