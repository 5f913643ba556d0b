/**
 * A session as a plain Markdown transcript, to paste anywhere (`sessions export KEY --format md`):
 * a header with the model, the time, the turns, tokens and cost (from the log's turn-outcome
 * records), then every stored entry in order: prompts and answers as their text, reasoning and
 * tool output in fenced blocks, tool calls with their arguments pretty-printed, each turn's end
 * (status, error, tokens) and compactions and rewinds as notes. Known secrets are scrubbed from
 * every string; images are named, never inlined.
 */
import type { Content, ToolCall } from "../domain/Message.ts"
import type { SessionEntry } from "../domain/SessionLog.ts"
import * as SessionLog from "../domain/SessionLog.ts"
import * as Usage from "../domain/Usage.ts"

/** What `exportMarkdown` takes besides the log. */
export interface MarkdownOptions {
  /** Removes known secrets from a text (`Secrets.scrub`). */
  readonly scrub: (text: string) => string
  /** When the session was last written, for the header. */
  readonly updatedAt?: number
}

/** A fence longer than any run of backticks in `text`, so the text cannot close it. */
const fenced = (text: string, info = ""): string => {
  const longest = Math.max(2, ...(text.match(/`+/g) ?? []).map((run) => run.length))
  const fence = "`".repeat(longest + 1)
  return `${fence}${info}\n${text}${text.endsWith("\n") ? "" : "\n"}${fence}`
}

/** `content`'s text, images named by their type. */
const textOf = (content: Content): string =>
  typeof content === "string"
    ? content
    : content.map((part) => part.type === "text" ? part.text : `[image${part.mediaType === undefined ? "" : ` ${part.mediaType}`}]`).join("\n")

/** A call's arguments, pretty-printed when they are JSON. */
const argumentsOf = (call: ToolCall): string => {
  try {
    return JSON.stringify(JSON.parse(call.arguments), null, 2)
  } catch {
    return call.arguments
  }
}

const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z")

/** Tokens and cost of a usage, on one line. */
const usageLine = (usage: Usage.Usage): string =>
  `${usage.inputTokens.toLocaleString("en-US")} in / ${usage.outputTokens.toLocaleString("en-US")} out tokens` +
  (usage.costUsd === undefined ? "" : `, $${usage.costUsd.toFixed(usage.costUsd < 0.01 ? 4 : 2)}`)

/**
 * What a session's header says, as name and value pairs: its models, its time span, turns, last
 * status and totals (from the turn-outcome records; a log from before them has fewer rows).
 */
export const summaryOf = (entries: ReadonlyArray<SessionEntry>, updatedAt?: number): ReadonlyArray<readonly [string, string]> => {
  const outcomes = SessionLog.outcomes(entries)
  const described = SessionLog.describe(entries)
  const models = [...new Set(outcomes.flatMap((o) => o.model === undefined ? [] : [o.model]))]
  const total = outcomes.reduce((sum, o) => Usage.add(sum, o.usage), Usage.empty)
  const first = outcomes[0]?.startedAt
  const last = outcomes.at(-1)?.endedAt ?? updatedAt
  const rows: Array<readonly [string, string | undefined]> = [
    ["Model", models.length === 0 ? undefined : models.join(", ")],
    ["Workspace", described.workspace],
    ["Time", first === undefined ? (last === undefined ? undefined : iso(last)) : `${iso(first)} – ${iso(last ?? first)}`],
    ["Turns", String(described.turns)],
    ["Last status", described.status],
    ["Tokens", outcomes.length === 0 ? undefined : usageLine(total)]
  ]
  return rows.flatMap(([name, value]) => value === undefined ? [] : [[name, value] as const])
}

/** The header: the session and its summary. */
const header = (sessionKey: string, entries: ReadonlyArray<SessionEntry>, options: MarkdownOptions): Array<string> => [
  `# Session ${sessionKey}`,
  "",
  ...summaryOf(entries, options.updatedAt).map(([name, value]) => `- **${name}:** ${value}`),
  ""
]

/** One entry of the log as Markdown lines. */
const entryLines = (entry: SessionEntry): Array<string> => {
  switch (entry.role) {
    case "system":
      return ["## System", "", fenced(entry.content), ""]
    case "user":
      return ["## User", "", textOf(entry.content), ""]
    case "assistant":
      return [
        `## Assistant${entry.partial === true ? " (cut off)" : ""}`,
        "",
        ...(entry.reasoning ? ["<details><summary>Reasoning</summary>", "", fenced(entry.reasoning), "", "</details>", ""] : []),
        ...(entry.content === "" ? [] : [entry.content, ""]),
        ...(entry.toolCalls ?? []).flatMap((call) => [`**Tool call** \`${call.name}\` (${call.id})`, "", fenced(argumentsOf(call), "json"), ""])
      ]
    case "tool":
      return [`### Tool result \`${entry.toolName}\` (${entry.toolCallId})${entry.isError === true ? ": error" : ""}`, "", fenced(textOf(entry.content)), ""]
    case "outcome":
      return [
        `> Turn ${entry.status}` +
        `${entry.model === undefined ? "" : ` · ${entry.model}`} · ${entry.iterations} iteration(s) · ${usageLine(entry.usage)}` +
        ` · ${((entry.endedAt - entry.startedAt) / 1000).toFixed(1)} s`,
        ...(entry.error === undefined ? [] : [`> **${entry.error._tag}:** ${entry.error.message.replace(/\n/g, "\n> ")}`]),
        ""
      ]
    case "compaction":
      return [`> Context compacted (${entry.reason})${entry.summary === undefined ? "" : ": the earlier conversation summarised"}`, "", ...(entry.summary === undefined ? [] : [fenced(entry.summary), ""])]
    case "rewind":
      return [`> Rewound: the conversation continues from message ${entry.cut}; what follows before this note is an abandoned branch`, ""]
    case "meta":
      return []
  }
}

/** The Markdown transcript of session `sessionKey` whose stored log is `entries`. */
export const exportMarkdown = (sessionKey: string, entries: ReadonlyArray<SessionEntry>, options: MarkdownOptions): string =>
  options.scrub([...header(sessionKey, entries, options), ...entries.flatMap(entryLines)].join("\n"))
