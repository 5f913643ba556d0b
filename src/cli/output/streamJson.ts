/**
 * `--output-format stream-json` and `--input-format stream-json` in the shapes Claude Code uses,
 * so that scripts written for `claude -p --output-format stream-json` read `agent-loop`'s too.
 *
 * Output: a first line `{"type":"system","subtype":"init",...}` (session, model, tools, cwd), then
 * the loop's events, one per line, each with `"type":"event"` beside its `_tag`, with Claude Code's
 * `assistant` and `user` message lines after the events they stand for (a reply, a tool result),
 * then after each turn a `{"type":"result",...}` line (status, answer, usage, cost, duration,
 * session id), with Claude Code's field names beside the loop's own. Every line has both `type`
 * and `_tag`.
 *
 * Input: one JSON object per line, `{"type":"user","message":{"role":"user","content":...}}`,
 * content a string or a list of `text` and base64 `image` blocks; each line is one turn of the
 * same session, in order, in one process. A line longer than `MAX_INPUT_LINE_BYTES`, not UTF-8 or
 * not a user message fails with one line naming it; the turns before it are kept.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Message from "../../domain/Message.ts"
import type { AgentEvent } from "../../domain/Event.ts"
import type { TurnResult } from "../../domain/Turn.ts"
import { CliFailure } from "../terminal/failure.ts"
import type { RunResult } from "./runResult.ts"

export { type InputFormat, inputFormats } from "./formats.ts"

/** The longest input line taken: room for an image at the default image limit, base64-encoded. */
export const MAX_INPUT_LINE_BYTES = 8 * 1024 * 1024

/** The first line: what the run works with. */
export const initLine = (fields: {
  readonly sessionKey: string
  readonly model: string
  readonly tools: ReadonlyArray<string>
  readonly cwd: string
}) => ({
  type: "system" as const,
  subtype: "init" as const,
  _tag: "Init" as const,
  session_id: fields.sessionKey,
  sessionKey: fields.sessionKey,
  model: fields.model,
  tools: fields.tools,
  cwd: fields.cwd
})

/** Claude Code's `subtype` of a result. */
const subtypeOf = (status: TurnResult["status"]) =>
  status === "completed" ? "success" : status === "max_iterations" ? "error_max_turns" : "error_during_execution"

/** The line after a turn: `--output-format json`'s object (`own`) with Claude Code's names beside it. */
export const resultLine = (own: RunResult, result: TurnResult) => {
  return {
    ...own,
    _tag: "Result" as const,
    subtype: subtypeOf(result.status),
    is_error: result.status !== "completed",
    session_id: result.sessionKey,
    duration_ms: own.durationMs,
    num_turns: result.iterations,
    total_cost_usd: own.costUsd,
    usage: own.usage === null ? null : {
      ...own.usage,
      input_tokens: own.usage.inputTokens,
      output_tokens: own.usage.outputTokens,
      ...(own.usage.cachedInputTokens === undefined ? {} : { cache_read_input_tokens: own.usage.cachedInputTokens }),
      ...(own.usage.cacheWriteTokens === undefined ? {} : { cache_creation_input_tokens: own.usage.cacheWriteTokens })
    }
  }
}

/** An event's JSON line (`Schema`-encoded, `_tag` first) with `"type":"event"` put in front. */
export const eventLine = (encoded: string): string => `{"type":"event",${encoded.slice(1)}`

/** A tool call's arguments as Claude Code's `input` object (text that is not a JSON object stays text, under `arguments`). */
const toolInput = (args: string): unknown => {
  try {
    const parsed: unknown = JSON.parse(args)
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? parsed : { arguments: args }
  } catch {
    return { arguments: args }
  }
}

/**
 * The Claude Code message lines an event of the top-level turn stands for, after its own line: a
 * model reply is an `assistant` message (text and `tool_use` blocks), a tool's result (or a skipped
 * call's reason) a `user` message with a `tool_result` block. Sub-turns' events have none.
 */
export const messageLines = (event: AgentEvent): ReadonlyArray<object> => {
  if (event.depth !== 0) return []
  switch (event._tag) {
    case "LLMResponse": {
      const content = [
        ...(event.content === "" ? [] : [{ type: "text", text: event.content }]),
        ...event.toolCalls.map((call) => ({ type: "tool_use", id: call.id, name: call.name, input: toolInput(call.arguments) }))
      ]
      return [{
        type: "assistant",
        _tag: "AssistantMessage",
        message: {
          type: "message",
          role: "assistant",
          model: event.model,
          content,
          stop_reason: event.finishReason,
          usage: { input_tokens: event.usage.inputTokens, output_tokens: event.usage.outputTokens }
        },
        parent_tool_use_id: null,
        session_id: event.sessionKey
      }]
    }
    case "ToolExecEnd":
    case "ToolExecSkipped": {
      const [content, isError] = event._tag === "ToolExecEnd" ? [event.result, event.isError] : [event.reason, true]
      return [{
        type: "user",
        _tag: "ToolResultMessage",
        message: { role: "user", content: [{ type: "tool_result", tool_use_id: event.toolCallId, content, is_error: isError }] },
        parent_tool_use_id: null,
        session_id: event.sessionKey
      }]
    }
    default:
      return []
  }
}

const TextBlock = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })
const ImageBlock = Schema.Struct({
  type: Schema.Literal("image"),
  source: Schema.Struct({ type: Schema.Literal("base64"), media_type: Schema.String, data: Schema.String })
})

/** A user message line, as Claude Code reads them. */
export const UserLine = Schema.Struct({
  type: Schema.Literal("user"),
  message: Schema.Struct({
    role: Schema.Literal("user"),
    content: Schema.Union([Schema.String, Schema.Array(Schema.Union([TextBlock, ImageBlock]))])
  })
})
export type UserLine = typeof UserLine.Type

const decodeLine = Schema.decodeUnknownEffect(Schema.fromJsonString(UserLine))

/** The turn input of a user line. */
export const inputOf = (line: UserLine): Message.Content => {
  const content = line.message.content
  if (typeof content === "string") return content
  return content.map((block) => block.type === "text" ? Message.text(block.text) : Message.image(block.source.media_type, block.source.data))
}

const failure = (message: string) => new CliFailure({ message, code: 1 })

/** The lines of `input`, each at most `max` bytes, decoded as UTF-8. */
async function* linesOf(input: AsyncIterable<Uint8Array | string>, max: number): AsyncGenerator<string> {
  const decoder = new TextDecoder("utf-8", { fatal: true })
  let pending: Array<Uint8Array> = []
  let size = 0
  let number = 0
  const take = (last: Uint8Array) => {
    number++
    pending.push(last)
    const bytes = Buffer.concat(pending)
    pending = []
    size = 0
    try {
      return decoder.decode(bytes)
    } catch {
      throw failure(`line ${number} of stdin is not UTF-8 text`)
    }
  }
  const tooLong = () => failure(`line ${number + 1} of stdin is longer than ${max} bytes`)
  for await (const chunk of input) {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk
    let start = 0
    let newline: number
    while ((newline = bytes.indexOf(10, start)) !== -1) {
      if (size + newline - start > max) throw tooLong()
      yield take(bytes.subarray(start, newline))
      start = newline + 1
    }
    const rest = bytes.subarray(start)
    size += rest.length
    if (size > max) throw tooLong()
    if (rest.length > 0) pending.push(rest)
  }
  if (size > 0) yield take(new Uint8Array(0))
}

/**
 * The turn inputs of the user lines on `input`, in order; blank lines are skipped. Fails with a
 * `CliFailure` naming the first line that is not a user message.
 */
export const userInputs = (input: AsyncIterable<Uint8Array | string>, max: number = MAX_INPUT_LINE_BYTES): Stream.Stream<Message.Content, CliFailure> =>
  Stream.fromAsyncIterable(linesOf(input, max), (error) => error instanceof CliFailure ? error : failure(`cannot read stdin: ${String(error)}`)).pipe(
    Stream.zipWithIndex,
    Stream.filter(([line]) => line.trim() !== ""),
    Stream.mapEffect(([line, index]) =>
      decodeLine(line).pipe(
        Effect.map(inputOf),
        Effect.mapError(() =>
          failure(`line ${index + 1} of stdin is not a user message: expected {"type":"user","message":{"role":"user","content":"..."}}`)
        )
      )
    )
  )
