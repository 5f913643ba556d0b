/**
 * A session's transcript in Claude Code's JSON Lines shape, for hook scripts that read
 * `transcript_path`: one line per user prompt, assistant reply (text and `tool_use` blocks, tools
 * by Claude Code's names) and tool result, each with `type`, `message`, `uuid`, `parentUuid`,
 * `sessionId`, `timestamp` and `cwd`. Lines are appended from the event bus, and brought up to date
 * before every hook runs, so a script always reads the reply that led to it. Only top-level turns
 * are written (a sub-turn's lines are its own conversation). Texts are scrubbed of known secrets.
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import type { AgentEvent } from "../../domain/Event.ts"
import * as Message from "../../domain/Message.ts"
import type { SecretsShape } from "../../services/Secrets.ts"
import { claudeName, toClaudeInput } from "./io.ts"

/** The event kinds a transcript is made of. */
export const TRANSCRIPT_KINDS = ["TurnStart", "LLMResponse", "ToolExecEnd", "ToolExecSkipped"] as const

/** Where a session's transcript is: a file name from the key that no key can turn into a path elsewhere. */
export const transcriptFile = (dir: string, sessionKey: string): string =>
  nodePath.join(dir, `${encodeURIComponent(sessionKey).replace(/\./g, "%2E")}.jsonl`)

/** The writer of the transcripts of one loop. */
export interface Transcripts {
  readonly path: (sessionKey: string) => string
  /** Appends the lines of `events` (in order) to their sessions' files. */
  readonly write: (events: ReadonlyArray<AgentEvent>) => Effect.Effect<void>
}

/** Transcripts kept in `dir` (made 0700 on first use; files 0600). */
export const make = (dir: string, cwd: string, secrets: SecretsShape): Transcripts => {
  const last = new Map<string, string>()
  let made = false
  const line = (event: AgentEvent): Record<string, unknown> | undefined => {
    switch (event._tag) {
      case "TurnStart":
        return { type: "user", message: { role: "user", content: secrets.scrub(Message.textOf(event.input)) } }
      case "LLMResponse": {
        const content: Array<Record<string, unknown>> = []
        if (event.content !== "") content.push({ type: "text", text: secrets.scrub(event.content) })
        for (const call of event.toolCalls) {
          let input: unknown
          try {
            input = JSON.parse(call.arguments)
          } catch {
            input = {}
          }
          content.push({ type: "tool_use", id: call.id, name: claudeName(call), input: toClaudeInput(call.name, input, cwd) })
        }
        return { type: "assistant", message: { role: "assistant", model: event.model, content } }
      }
      case "ToolExecEnd":
      case "ToolExecSkipped": {
        const text = event._tag === "ToolExecEnd" ? event.result : event.reason
        const isError = event._tag === "ToolExecSkipped" || event.isError
        return {
          type: "user",
          message: { role: "user", content: [{ type: "tool_result", tool_use_id: event.toolCallId, content: secrets.scrub(text), is_error: isError }] }
        }
      }
      default:
        return undefined
    }
  }
  return {
    path: (sessionKey) => transcriptFile(dir, sessionKey),
    write: (events) =>
      Effect.sync(() => {
        const bySession = new Map<string, Array<string>>()
        for (const event of events) {
          if (event.depth > 0) continue
          const body = line(event)
          if (body === undefined) continue
          const uuid = crypto.randomUUID()
          const entry = {
            ...body,
            uuid,
            parentUuid: last.get(event.sessionKey) ?? null,
            sessionId: event.sessionKey,
            timestamp: new Date(event.at).toISOString(),
            cwd,
            isSidechain: false,
            userType: "external"
          }
          last.set(event.sessionKey, uuid)
          const lines = bySession.get(event.sessionKey) ?? []
          lines.push(JSON.stringify(entry))
          bySession.set(event.sessionKey, lines)
        }
        if (bySession.size === 0) return
        try {
          if (!made) {
            fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
            made = true
          }
          for (const [sessionKey, lines] of bySession) {
            fs.appendFileSync(transcriptFile(dir, sessionKey), `${lines.join("\n")}\n`, { mode: 0o600 })
          }
        } catch {
          // a transcript that cannot be written leaves hooks an older one; the turn goes on
        }
      })
  }
}
