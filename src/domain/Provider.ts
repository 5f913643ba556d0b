/**
 * The wire-independent shape of a model call: what the loop sends and the chunks it streams back.
 */
import * as Schema from "effect/Schema"
import { Message, ProviderBlock as ProviderBlockData } from "./Message.ts"
import { ModelOptions } from "./ModelOptions.ts"
import { Usage } from "./Usage.ts"

/** A tool as the model sees it: name, description and JSON Schema of its parameters. */
export const ToolDefinition = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  parameters: Schema.Record(Schema.String, Schema.Unknown)
})
export type ToolDefinition = typeof ToolDefinition.Type

/**
 * A typed final answer the turn asks for. The loop offers it two ways at once: as the tool
 * `name` in the request's `tools` (the portable way: the model calls it with the answer), and
 * as this field, so that a provider with native structured output (OpenAI's `response_format`)
 * can drop that tool and constrain the reply's text instead. The loop accepts either form.
 * `force` says the final answer is due now: a provider that can force a tool forces `name`.
 */
export const OutputFormat = Schema.Struct({
  name: Schema.String,
  /** The JSON Schema of the answer. */
  schema: Schema.Record(Schema.String, Schema.Unknown),
  force: Schema.optionalKey(Schema.Boolean)
})
export type OutputFormat = typeof OutputFormat.Type

/** One provider call: the model, the conversation, the tools, the model options (`ModelOptions`), and the typed answer asked for. */
export const ProviderRequest = Schema.Struct({
  model: Schema.String,
  messages: Schema.Array(Message),
  tools: Schema.Array(ToolDefinition),
  ...ModelOptions.fields,
  output: Schema.optionalKey(OutputFormat)
})
export type ProviderRequest = typeof ProviderRequest.Type

/** Why the model stopped. */
export const FinishReason = Schema.Literals(["stop", "tool_calls", "length", "content_filter", "other"])
export type FinishReason = typeof FinishReason.Type

/** A piece of visible text. */
export const TextDelta = Schema.TaggedStruct("TextDelta", { text: Schema.String })
/** A piece of the model's reasoning, where the server sends it. */
export const ReasoningDelta = Schema.TaggedStruct("ReasoningDelta", { text: Schema.String })
/** A piece of a tool call; calls are assembled by `index`, `id` and `name` come first. */
export const ToolCallDelta = Schema.TaggedStruct("ToolCallDelta", {
  index: Schema.Number,
  id: Schema.optionalKey(Schema.String),
  name: Schema.optionalKey(Schema.String),
  argumentsDelta: Schema.String
})
/** Provider data for the reply's `providerBlocks` (a signed thinking block, a reasoning item): not shown, sent back. */
export const ProviderBlock = Schema.TaggedStruct("ProviderBlock", { block: ProviderBlockData })
/**
 * The end of a response: why it stopped, its usage, and where the server says so, the response's
 * id and the model that answered (for the `chat` span's `gen_ai.response.id` and `gen_ai.response.model`).
 */
export const Finish = Schema.TaggedStruct("Finish", {
  reason: FinishReason,
  usage: Schema.optionalKey(Usage),
  responseId: Schema.optionalKey(Schema.String),
  responseModel: Schema.optionalKey(Schema.String)
})

/** What a provider streams. */
export const ProviderChunk = Schema.Union([TextDelta, ReasoningDelta, ToolCallDelta, ProviderBlock, Finish])
export type ProviderChunk = typeof ProviderChunk.Type
