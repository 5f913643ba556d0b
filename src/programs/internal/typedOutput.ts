/**
 * Typed final answers (`TurnOptions.output`): what the loop offers the model and how it reads
 * the reply.
 *
 * The answer is offered two ways in one request (see `OutputFormat`): a `respond` tool beside the
 * turn's other tools, and the `output` field for providers with native structured output. So the
 * model keeps its tools while it works, and gives the answer either by calling `respond` or (where
 * the provider constrains the reply's text) as JSON text. A reply that is neither goes back to the
 * model with the reason, and the next call forces the answer where the provider can force a tool.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Message from "../../domain/Message.ts"
import { jsonTooDeep, MAX_JSON_DEPTH } from "../../domain/text.ts"
import type { OutputFormat, ToolDefinition } from "../../domain/Provider.ts"
import { jsonSchemaOf } from "../../domain/Tool.ts"

/** The name of the tool that takes the final answer. */
export const RESPOND_TOOL = "respond"

/** What the `respond` tool answers when the answer decoded. */
export const ACCEPTED = "Answer accepted."

/** What the `respond` tool answers when it was called beside other tools. */
export const NOT_ALONE = `Call ${RESPOND_TOOL} on its own, once the other tool calls have returned.`

/** A turn's typed answer: how to decode it and how to ask for it. */
export interface OutputSpec {
  readonly decode: (input: unknown) => Effect.Effect<unknown, Schema.SchemaError>
  readonly schema: Record<string, unknown>
  readonly definition: ToolDefinition
}

/**
 * A derived JSON Schema with every struct closed (`additionalProperties: true` becomes `false`).
 * A Struct ignores keys it does not declare when it decodes, so asking the model for none of them
 * loses nothing, and a closed schema is one OpenAI can enforce strictly.
 */
const closed = (schema: unknown): unknown => {
  if (Array.isArray(schema)) return schema.map(closed)
  if (typeof schema !== "object" || schema === null) return schema
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) {
    out[key] = key === "enum" || key === "const" ? value : key === "additionalProperties" && value === true && "properties" in schema ? false : closed(value)
  }
  return out
}

/** The spec of an `output` Schema; `jsonSchema` overrides the JSON Schema derived from it. */
export const make = (output: Schema.Decoder<unknown>, jsonSchema?: Record<string, unknown>): OutputSpec => {
  const decode = Schema.decodeUnknownEffect(output)
  const schema = jsonSchema ?? closed(jsonSchemaOf(output)) as Record<string, unknown>
  return {
    decode: (input) => decode(input, { errors: "all" }),
    schema,
    definition: {
      name: RESPOND_TOOL,
      description: "Give your final answer: call this once, on its own, when you are done; its arguments are the answer.",
      parameters: schema
    }
  }
}

/** One turn's progress towards its answer. */
export interface OutputState {
  readonly spec: OutputSpec
  /** Answers rejected so far. */
  rejected: number
  /** The next call must give the answer (the last reply was text that is not one). */
  force: boolean
}

/** A turn's state for `spec`. */
export const start = (spec: OutputSpec): OutputState => ({ spec, rejected: 0, force: false })

/** The `output` field of the next request; a forced answer is asked for once. */
export const formatFor = (state: OutputState): OutputFormat => {
  const force = state.force
  state.force = false
  return { name: RESPOND_TOOL, schema: state.spec.schema, ...(force ? { force: true } : {}) }
}

/**
 * What a reply means for the answer:
 * - `Tools`: it calls other tools, to run; `respond` among them is answered with `after` (an error).
 * - `Answer`: the decoded answer; `after` answers the `respond` call, if there was one.
 * - `Rejected`: no valid answer; `after` tells the model why (a tool result or a user message).
 */
export type Reading =
  | { readonly _tag: "Tools"; readonly calls: ReadonlyArray<Message.ToolCall>; readonly after: ReadonlyArray<Message.Message> }
  | { readonly _tag: "Answer"; readonly value: unknown; readonly after: ReadonlyArray<Message.Message> }
  | { readonly _tag: "Rejected"; readonly error: string; readonly after: ReadonlyArray<Message.Message> }

/** Text that is only a fenced code block (a habit of models asked for JSON) without its fence. */
const unfenced = (text: string): string => {
  const fenced = /^```[A-Za-z]*\n([\s\S]*?)\n?```$/.exec(text.trim())
  return fenced ? fenced[1]! : text.trim()
}

const parseJson = (text: string): { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly deep?: true } => {
  // deeper JSON would overflow the stack in the (recursive) decoding of a recursive Schema
  if (jsonTooDeep(text)) return { ok: false, deep: true }
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

/** Reads a reply of the model (already appended to the conversation); counts rejections in `state`. */
export const read = (state: OutputState, reply: Message.AssistantMessage): Effect.Effect<Reading> => {
  const calls = reply.toolCalls ?? []
  const respond = calls.find((call) => call.name === RESPOND_TOOL)
  if (calls.length > 0 && (respond === undefined || calls.length > 1)) {
    const others = calls.filter((call) => call.name !== RESPOND_TOOL)
    const refused = calls.filter((call) => call.name === RESPOND_TOOL).map((call) => Message.toolResult(call, NOT_ALONE, true))
    return Effect.succeed({ _tag: "Tools", calls: others, after: refused })
  }
  const reject = (error: string, after: Message.Message): Reading => {
    state.rejected++
    return { _tag: "Rejected", error, after: [after] }
  }
  const source = respond === undefined
    ? parseJson(unfenced(reply.content))
    : parseJson(respond.arguments.trim() === "" ? "{}" : respond.arguments)
  if (!source.ok && source.deep) {
    const why = `The answer nests deeper than ${MAX_JSON_DEPTH} levels`
    return Effect.succeed(reject(
      why,
      respond === undefined
        ? Message.user(`${why}.\nGive the corrected final answer.`)
        : Message.toolResult(respond, `${why}. Call ${RESPOND_TOOL} again with a corrected answer.`, true)
    ))
  }
  if (!source.ok && respond !== undefined) {
    return Effect.succeed(reject(
      "The answer's arguments are not JSON",
      Message.toolResult(respond, `Invalid answer: the arguments are not JSON. Call ${RESPOND_TOOL} again with valid JSON.`, true)
    ))
  }
  if (!source.ok) {
    state.force = true
    return Effect.succeed(reject(
      "The final answer is not JSON",
      Message.user(`Your final answer must be the structured result, not text: call the "${RESPOND_TOOL}" tool with it (or, if you have no such tool, reply with the JSON alone).`)
    ))
  }
  return state.spec.decode(source.value).pipe(
    Effect.map((value): Reading => ({
      _tag: "Answer",
      value,
      after: respond === undefined ? [] : [Message.toolResult(respond, ACCEPTED)]
    })),
    Effect.catch((error) => {
      const why = `The answer does not match the output schema: ${error.message}`
      return Effect.succeed(reject(
        why,
        respond === undefined
          ? Message.user(`${why}\nGive the corrected final answer.`)
          : Message.toolResult(respond, `${why}\nCall ${RESPOND_TOOL} again with a corrected answer.`, true)
      ))
    })
  )
}

/**
 * What the turn does after a reply (already appended), typed answer or not:
 * - `Tools`: run `calls`, then append `after`, and call the model again.
 * - `Retry`: append `after` (why the answer was refused) and call the model again.
 * - `Failed`: append `after` and end the turn `failed`: the answer is invalid for `error` (out of retries).
 * - `Final`: append `after`; the reply is a final answer (`output` when typed).
 */
export type Next =
  | { readonly _tag: "Tools"; readonly calls: ReadonlyArray<Message.ToolCall>; readonly after: ReadonlyArray<Message.Message> }
  | { readonly _tag: "Retry"; readonly after: ReadonlyArray<Message.Message> }
  | { readonly _tag: "Failed"; readonly error: string; readonly after: ReadonlyArray<Message.Message> }
  | { readonly _tag: "Final"; readonly output?: unknown; readonly after: ReadonlyArray<Message.Message> }

/** What follows `reply` for a turn without a typed answer. */
export const untyped = (reply: Message.AssistantMessage): Next =>
  reply.toolCalls !== undefined && reply.toolCalls.length > 0 ? { _tag: "Tools", calls: reply.toolCalls, after: [] } : { _tag: "Final", after: [] }

/** What follows `reply` for a turn with the answer `state`, refusing more than `maxRetries` answers. */
export const next = (state: OutputState, reply: Message.AssistantMessage, maxRetries: number): Effect.Effect<Next> => Effect.map(read(state, reply), (reading): Next => {
    switch (reading._tag) {
      case "Tools":
        return reading.calls.length > 0 ? reading : { _tag: "Retry", after: reading.after }
      case "Answer":
        return { _tag: "Final", output: reading.value, after: reading.after }
      case "Rejected":
        // Out of retries: the respond call is answered (the history stays valid), the feedback is not sent.
        return state.rejected > maxRetries
          ? { _tag: "Failed", error: reading.error, after: reading.after.filter((message) => message.role === "tool") }
          : { _tag: "Retry", after: reading.after }
    }
  })
