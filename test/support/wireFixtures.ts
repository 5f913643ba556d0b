/**
 * Byte-for-byte response bodies of the two wire formats, shared by the provider tests and the
 * fuzz test: what OpenAI and Anthropic actually send for a text reply with reasoning and two
 * parallel tool calls, and the chunks the library must decode from them; and the tool the
 * request-body tests offer.
 */
import type { ProviderTypes } from "effect-agent-loop"
import { data, event } from "./wireServer.ts"

/** A `read_file` tool definition as a request carries it. */
export const readFile: ProviderTypes.ToolDefinition = {
  name: "read_file",
  description: "Reads a file",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] }
}

const oa = (delta: unknown, finish: string | null = null) => ({
  id: "chatcmpl-9x",
  object: "chat.completion.chunk",
  created: 1736000000,
  model: "gpt-4o-2024-08-06",
  system_fingerprint: "fp_abc",
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  usage: null
})

/** OpenAI: role chunk, reasoning, text with multi-byte characters, keep-alive, usage chunk, [DONE]. */
export const openAiText = [
  data(oa({ role: "assistant", content: "", refusal: null })),
  ": keep-alive\n\n",
  data(oa({ reasoning_content: "Think: grüße" })),
  data(oa({ content: "Grüße, " })),
  data(oa({ content: "世界 🌍" })),
  data(oa({}, "stop")),
  data({ ...oa({}), choices: [], usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 } }),
  "data: [DONE]\n\n"
].join("")

/** What `openAiText` decodes to. */
export const openAiTextChunks: ReadonlyArray<ProviderTypes.ProviderChunk> = [
  { _tag: "ReasoningDelta", text: "Think: grüße" },
  { _tag: "TextDelta", text: "Grüße, " },
  { _tag: "TextDelta", text: "世界 🌍" },
  { _tag: "Finish", reason: "stop", usage: { inputTokens: 12, outputTokens: 5 }, responseId: "chatcmpl-9x", responseModel: "gpt-4o-2024-08-06" }
]

const call = (index: number, fields: Record<string, unknown>) => oa({ tool_calls: [{ index, ...fields }] })

/** OpenAI: two parallel tool calls whose argument pieces interleave. */
export const openAiTools = [
  data(oa({ role: "assistant", content: null })),
  data(call(0, { id: "call_a", type: "function", function: { name: "read_file", arguments: "" } })),
  data(call(1, { id: "call_b", type: "function", function: { name: "list_dir", arguments: "" } })),
  data(call(0, { function: { arguments: "{\"path\":" } })),
  data(call(1, { function: { arguments: "{\"path\":\".\"}" } })),
  data(call(0, { function: { arguments: "\"ä.md\"}" } })),
  data(oa({}, "tool_calls")),
  data({ ...oa({}), choices: [], usage: { prompt_tokens: 40, completion_tokens: 22, total_tokens: 62 } }),
  "data: [DONE]\n\n"
].join("")

/** What `openAiTools` decodes to. */
export const openAiToolsChunks: ReadonlyArray<ProviderTypes.ProviderChunk> = [
  { _tag: "ToolCallDelta", index: 0, id: "call_a", name: "read_file", argumentsDelta: "" },
  { _tag: "ToolCallDelta", index: 1, id: "call_b", name: "list_dir", argumentsDelta: "" },
  { _tag: "ToolCallDelta", index: 0, argumentsDelta: "{\"path\":" },
  { _tag: "ToolCallDelta", index: 1, argumentsDelta: "{\"path\":\".\"}" },
  { _tag: "ToolCallDelta", index: 0, argumentsDelta: "\"ä.md\"}" },
  { _tag: "Finish", reason: "tool_calls", usage: { inputTokens: 40, outputTokens: 22 }, responseId: "chatcmpl-9x", responseModel: "gpt-4o-2024-08-06" }
]

/** Anthropic: thinking, text, two tool_use blocks, pings, usage in message_start and message_delta. */
export const anthropicStream = [
  event("message_start", {
    type: "message_start",
    message: {
      id: "msg_01",
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5",
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 25, output_tokens: 1 }
    }
  }),
  event("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "" } }),
  event("ping", { type: "ping" }),
  event("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "Überlege…" } }),
  event("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "sig" } }),
  event("content_block_stop", { type: "content_block_stop", index: 0 }),
  event("content_block_start", { type: "content_block_start", index: 1, content_block: { type: "text", text: "" } }),
  event("content_block_delta", { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "Hallo 世界" } }),
  event("content_block_stop", { type: "content_block_stop", index: 1 }),
  event("content_block_start", {
    type: "content_block_start",
    index: 2,
    content_block: { type: "tool_use", id: "toolu_a", name: "read_file", input: {} }
  }),
  event("content_block_delta", { type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: "" } }),
  event("content_block_delta", { type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: "{\"path\": \"ä" } }),
  event("content_block_delta", { type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: ".md\"}" } }),
  event("content_block_stop", { type: "content_block_stop", index: 2 }),
  event("content_block_start", {
    type: "content_block_start",
    index: 3,
    content_block: { type: "tool_use", id: "toolu_b", name: "list_dir", input: {} }
  }),
  event("content_block_delta", { type: "content_block_delta", index: 3, delta: { type: "input_json_delta", partial_json: "{\"path\": \".\"}" } }),
  event("content_block_stop", { type: "content_block_stop", index: 3 }),
  event("message_delta", {
    type: "message_delta",
    delta: { stop_reason: "tool_use", stop_sequence: null },
    usage: { output_tokens: 89 }
  }),
  event("message_stop", { type: "message_stop" })
].join("")

/** What `anthropicStream` decodes to. */
export const anthropicChunks: ReadonlyArray<ProviderTypes.ProviderChunk> = [
  { _tag: "ReasoningDelta", text: "Überlege…" },
  { _tag: "ProviderBlock", block: { provider: "anthropic", data: { type: "thinking", thinking: "Überlege…", signature: "sig" } } },
  { _tag: "TextDelta", text: "Hallo 世界" },
  { _tag: "ToolCallDelta", index: 0, id: "toolu_a", name: "read_file", argumentsDelta: "" },
  { _tag: "ToolCallDelta", index: 0, argumentsDelta: "{\"path\": \"ä" },
  { _tag: "ToolCallDelta", index: 0, argumentsDelta: ".md\"}" },
  { _tag: "ToolCallDelta", index: 1, id: "toolu_b", name: "list_dir", argumentsDelta: "" },
  { _tag: "ToolCallDelta", index: 1, argumentsDelta: "{\"path\": \".\"}" },
  { _tag: "Finish", reason: "tool_calls", usage: { inputTokens: 25, outputTokens: 89 }, responseId: "msg_01", responseModel: "claude-sonnet-4-5" }
]

let sequence = 0
/** A Responses event as OpenAI frames it: the type both as the SSE event name and in the payload. */
const rs = (type: string, fields: Record<string, unknown>) => event(type, { type, sequence_number: sequence++, ...fields })

/** The reasoning item of `responsesStream`, as the API sends it back when `include` asks for its encrypted content. */
export const responsesReasoningItem = {
  id: "rs_01",
  type: "reasoning",
  summary: [{ type: "summary_text", text: "Plan: read." }, { type: "summary_text", text: "Then answer." }],
  encrypted_content: "gAAAAenc=="
}

const responseObject = (status: string, extra: Record<string, unknown> = {}) => ({
  id: "resp_01",
  object: "response",
  created_at: 1736000000,
  status,
  model: "gpt-5-2025-08-07",
  output: [],
  ...extra
})

/**
 * Responses: a reasoning item with two summary parts, text with multi-byte characters, a function
 * call whose arguments arrive in pieces, usage with cached and reasoning tokens.
 */
export const responsesStream = [
  rs("response.created", { response: responseObject("in_progress") }),
  rs("response.in_progress", { response: responseObject("in_progress") }),
  rs("response.output_item.added", { output_index: 0, item: { id: "rs_01", type: "reasoning", summary: [] } }),
  rs("response.reasoning_summary_part.added", { item_id: "rs_01", output_index: 0, summary_index: 0, part: { type: "summary_text", text: "" } }),
  rs("response.reasoning_summary_text.delta", { item_id: "rs_01", output_index: 0, summary_index: 0, delta: "Plan: read." }),
  rs("response.reasoning_summary_part.done", { item_id: "rs_01", output_index: 0, summary_index: 0, part: { type: "summary_text", text: "Plan: read." } }),
  rs("response.reasoning_summary_part.added", { item_id: "rs_01", output_index: 0, summary_index: 1, part: { type: "summary_text", text: "" } }),
  rs("response.reasoning_summary_text.delta", { item_id: "rs_01", output_index: 0, summary_index: 1, delta: "Then answer." }),
  rs("response.output_item.done", { output_index: 0, item: responsesReasoningItem }),
  rs("response.output_item.added", { output_index: 1, item: { id: "msg_01", type: "message", status: "in_progress", role: "assistant", content: [] } }),
  rs("response.content_part.added", { item_id: "msg_01", output_index: 1, content_index: 0, part: { type: "output_text", text: "", annotations: [] } }),
  rs("response.output_text.delta", { item_id: "msg_01", output_index: 1, content_index: 0, delta: "Grüße, " }),
  rs("response.output_text.delta", { item_id: "msg_01", output_index: 1, content_index: 0, delta: "世界 🌍" }),
  rs("response.output_text.done", { item_id: "msg_01", output_index: 1, content_index: 0, text: "Grüße, 世界 🌍" }),
  rs("response.output_item.done", {
    output_index: 1,
    item: { id: "msg_01", type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: "Grüße, 世界 🌍", annotations: [] }] }
  }),
  rs("response.output_item.added", {
    output_index: 2,
    item: { id: "fc_01", type: "function_call", status: "in_progress", arguments: "", call_id: "call_a", name: "read_file" }
  }),
  rs("response.function_call_arguments.delta", { item_id: "fc_01", output_index: 2, delta: "{\"path\":" }),
  rs("response.function_call_arguments.delta", { item_id: "fc_01", output_index: 2, delta: "\"ä.md\"}" }),
  rs("response.function_call_arguments.done", { item_id: "fc_01", output_index: 2, arguments: "{\"path\":\"ä.md\"}" }),
  rs("response.output_item.done", {
    output_index: 2,
    item: { id: "fc_01", type: "function_call", status: "completed", arguments: "{\"path\":\"ä.md\"}", call_id: "call_a", name: "read_file" }
  }),
  rs("response.completed", {
    response: responseObject("completed", {
      usage: {
        input_tokens: 120,
        input_tokens_details: { cached_tokens: 64 },
        output_tokens: 90,
        output_tokens_details: { reasoning_tokens: 48 },
        total_tokens: 210
      }
    })
  })
].join("")

/** What `responsesStream` decodes to: the response's items are kept, since its reasoning is. */
export const responsesChunks: ReadonlyArray<ProviderTypes.ProviderChunk> = [
  { _tag: "ReasoningDelta", text: "Plan: read." },
  { _tag: "ReasoningDelta", text: "\n\n" },
  { _tag: "ReasoningDelta", text: "Then answer." },
  { _tag: "TextDelta", text: "Grüße, " },
  { _tag: "TextDelta", text: "世界 🌍" },
  { _tag: "ToolCallDelta", index: 0, id: "call_a", name: "read_file", argumentsDelta: "" },
  { _tag: "ToolCallDelta", index: 0, argumentsDelta: "{\"path\":" },
  { _tag: "ToolCallDelta", index: 0, argumentsDelta: "\"ä.md\"}" },
  { _tag: "ProviderBlock", block: { provider: "openai-responses", data: responsesReasoningItem } },
  { _tag: "ProviderBlock", block: { provider: "openai-responses", data: { type: "message", id: "msg_01" } } },
  { _tag: "ProviderBlock", block: { provider: "openai-responses", data: { type: "function_call", id: "fc_01", call_id: "call_a" } } },
  { _tag: "Finish", reason: "tool_calls", usage: { inputTokens: 120, outputTokens: 90, cachedInputTokens: 64, reasoningTokens: 48 }, responseId: "resp_01", responseModel: "gpt-5-2025-08-07" }
]
