/**
 * Finding sessions: full-text search over what they hold (messages, reasoning, tool names and
 * arguments, tool output, errors) besides their key, workspace and first prompt, and filters by
 * status, model and date. A session's searchable text is read from its log once and kept until
 * the session changes (its `updatedAt` or size), so typing a second query reads no log again.
 */
import * as Effect from "effect/Effect"
import type { Content } from "../domain/Message.ts"
import type { SessionEntry } from "../domain/SessionLog.ts"
import type { SessionRow } from "./model.ts"

/** The filters of the session list, from the page's query (`status`, `model`, `from`, `to`). */
export interface Filters {
  /** A status (`completed`, `failed`, …, `running`): the session's last turn's. */
  readonly status?: string
  /** Part of the name of a model one of its turns ran with. */
  readonly model?: string
  /** Updated at or after this time, before `to` (epoch milliseconds). */
  readonly from?: number
  readonly to?: number
}

/** A session row with where the query matched, when it matched inside the conversation. */
export type FoundRow = SessionRow & { readonly match?: string }

const DAY = 86_400_000

/** The filters of a query string: dates as `YYYY-MM-DD` (the `to` day included), unknown values ignored. */
export const filtersOf = (query: URLSearchParams): Filters => {
  const day = (text: string | null) => text !== null && /^\d{4}-\d\d-\d\d$/.test(text) ? Date.parse(`${text}T00:00:00Z`) : NaN
  const from = day(query.get("from"))
  const to = day(query.get("to"))
  const status = query.get("status")?.trim() ?? ""
  const model = query.get("model")?.trim() ?? ""
  return {
    ...(status === "" ? {} : { status }),
    ...(model === "" ? {} : { model: model.toLowerCase() }),
    ...(Number.isNaN(from) ? {} : { from }),
    ...(Number.isNaN(to) ? {} : { to: to + DAY })
  }
}

/** What a session's log says for searching: its text (lower case) and the models its turns ran with. */
interface Facts {
  readonly text: string
  /** `text` as it was, for the snippet shown. */
  readonly original: string
  readonly models: ReadonlyArray<string>
}

const contentText = (content: Content): string =>
  typeof content === "string" ? content : content.map((part) => part.type === "text" ? part.text : "").join("\n")

/** The searchable text of a log: every message, tool names and arguments, tool output, errors. */
export const factsOf = (entries: ReadonlyArray<SessionEntry>): Facts => {
  const pieces: Array<string> = []
  const models = new Set<string>()
  for (const entry of entries) {
    switch (entry.role) {
      case "system":
        break
      case "user":
        pieces.push(contentText(entry.content))
        break
      case "assistant":
        pieces.push(entry.content, entry.reasoning ?? "", ...(entry.toolCalls ?? []).flatMap((call) => [call.name, call.arguments]))
        break
      case "tool":
        pieces.push(entry.toolName, contentText(entry.content))
        break
      case "outcome":
        if (entry.model !== undefined) models.add(entry.model)
        if (entry.error !== undefined) pieces.push(entry.error._tag, entry.error.message)
        break
      case "compaction":
        pieces.push(entry.summary ?? "")
        break
      default:
        break
    }
  }
  const original = pieces.filter((p) => p !== "").join("\n")
  return { text: original.toLowerCase(), original, models: [...models] }
}

/** Around the first place `needle` is in `text`, on one line. */
const snippet = (text: string, at: number, length: number): string => {
  const from = Math.max(0, at - 40)
  const to = Math.min(text.length, at + length + 60)
  return `${from > 0 ? "…" : ""}${text.slice(from, to).replace(/\s+/g, " ").trim()}${to < text.length ? "…" : ""}`
}

/**
 * A finder with its cache of facts, for the life of the inspector. `find` gives the rows that match
 * `query` and `filters`, reading the logs it needs (only when the query or the model filter needs
 * more than the rows say) through `logOf`, a few at a time; a log that cannot be read counts as empty.
 */
export const makeFinder = () => {
  const cache = new Map<string, { readonly stamp: string; readonly facts: Facts }>()
  const factsFor = (row: SessionRow, logOf: (key: string) => Effect.Effect<ReadonlyArray<SessionEntry>, unknown>): Effect.Effect<Facts> => {
    const stamp = `${row.updatedAt ?? ""}:${row.messages ?? ""}:${row.status ?? ""}`
    const kept = cache.get(row.sessionKey)
    if (kept !== undefined && kept.stamp === stamp) return Effect.succeed(kept.facts)
    return logOf(row.sessionKey).pipe(
      Effect.map(factsOf),
      Effect.orElseSucceed((): Facts => ({ text: "", original: "", models: [] })),
      Effect.tap((facts) => Effect.sync(() => cache.set(row.sessionKey, { stamp, facts })))
    )
  }
  const find = (
    rows: ReadonlyArray<SessionRow>,
    query: string,
    filters: Filters,
    logOf: (key: string) => Effect.Effect<ReadonlyArray<SessionEntry>, unknown>
  ): Effect.Effect<ReadonlyArray<FoundRow>> => {
    const needle = query.trim().toLowerCase()
    const kept = rows.filter((row) =>
      (filters.status === undefined || row.status === filters.status) &&
      (filters.from === undefined || (row.updatedAt ?? -Infinity) >= filters.from) &&
      (filters.to === undefined || (row.updatedAt ?? Infinity) < filters.to)
    )
    if (needle === "" && filters.model === undefined) return Effect.succeed(kept)
    const known = new Set(rows.map((row) => row.sessionKey))
    for (const key of cache.keys()) if (!known.has(key)) cache.delete(key)
    return Effect.map(
      Effect.forEach(kept, (row) => Effect.map(factsFor(row, logOf), (facts) => [row, facts] as const), { concurrency: 8 }),
      (found) =>
        found.flatMap(([row, facts]): Array<FoundRow> => {
          if (filters.model !== undefined && !facts.models.some((m) => m.toLowerCase().includes(filters.model!))) return []
          if (needle === "") return [row]
          if ([row.sessionKey, row.workspace ?? "", row.preview ?? ""].some((text) => text.toLowerCase().includes(needle))) return [row]
          const at = facts.text.indexOf(needle)
          return at < 0 ? [] : [{ ...row, match: snippet(facts.original, at, needle.length) }]
        })
    )
  }
  return { find }
}

/**
 * A timeline as the page draws it while its turn runs: it reaches `now`, so the call in flight
 * (whose bar ends at the timeline's end) grows with every redraw instead of being a sliver.
 */
export const inFlight = <T extends { readonly end: number; readonly status?: string | undefined }>(timeline: T | undefined, now: number): T | undefined =>
  timeline === undefined || (timeline.status !== undefined && timeline.status !== "running") ? timeline : { ...timeline, end: Math.max(timeline.end, now) }
