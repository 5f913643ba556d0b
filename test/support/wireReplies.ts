/**
 * Whole streamed replies in the three wire formats (Messages, Chat Completions, Responses), for
 * loopback servers that play a model over several calls: a text answer or one tool call, with
 * usage (cache counts included).
 */
import { data, event, type WireResponse } from "./wireServer.ts"

/** What the fake model says in one reply. */
export interface FakeReply {
  readonly text?: string
  readonly toolCall?: { readonly id: string; readonly name: string; readonly arguments: unknown }
  readonly usage?: { readonly input: number; readonly output: number; readonly cacheRead?: number; readonly cacheWrite?: number }
}

/** A Messages API stream of `reply`; `input` is the uncached tokens, as the API counts them. */
export const anthropicReply = (reply: FakeReply): WireResponse => {
  const usage = reply.usage ?? { input: 10, output: 2 }
  const blocks = [
    ...(reply.text === undefined ? [] : [
      event("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
      event("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: reply.text } }),
      event("content_block_stop", { type: "content_block_stop", index: 0 })
    ]),
    ...(reply.toolCall === undefined ? [] : [
      event("content_block_start", {
        type: "content_block_start",
        index: 1,
        content_block: { type: "tool_use", id: reply.toolCall.id, name: reply.toolCall.name, input: {} }
      }),
      event("content_block_delta", {
        type: "content_block_delta",
        index: 1,
        delta: { type: "input_json_delta", partial_json: JSON.stringify(reply.toolCall.arguments) }
      }),
      event("content_block_stop", { type: "content_block_stop", index: 1 })
    ])
  ]
  return {
    body: [
      event("message_start", {
        type: "message_start",
        message: {
          id: "msg",
          type: "message",
          role: "assistant",
          content: [],
          usage: {
            input_tokens: usage.input,
            output_tokens: 1,
            ...(usage.cacheRead === undefined ? {} : { cache_read_input_tokens: usage.cacheRead }),
            ...(usage.cacheWrite === undefined ? {} : { cache_creation_input_tokens: usage.cacheWrite })
          }
        }
      }),
      ...blocks,
      event("message_delta", {
        type: "message_delta",
        delta: { stop_reason: reply.toolCall ? "tool_use" : "end_turn" },
        usage: { output_tokens: usage.output }
      }),
      event("message_stop", { type: "message_stop" })
    ]
  }
}

/** A Chat Completions stream of `reply`; `input` is all prompt tokens, `cacheRead` the cached part of them. */
export const openAiReply = (reply: FakeReply): WireResponse => {
  const chunk = (delta: unknown, finish: string | null = null) => ({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })
  return {
    body: [
      data(chunk({ role: "assistant", content: reply.text ?? null })),
      ...(reply.toolCall === undefined ? [] : [data(chunk({
        tool_calls: [{
          index: 0,
          id: reply.toolCall.id,
          type: "function",
          function: { name: reply.toolCall.name, arguments: JSON.stringify(reply.toolCall.arguments) }
        }]
      }))]),
      data(chunk({}, reply.toolCall ? "tool_calls" : "stop")),
      data({
        id: "c",
        object: "chat.completion.chunk",
        choices: [],
        usage: {
          prompt_tokens: reply.usage?.input ?? 10,
          completion_tokens: reply.usage?.output ?? 2,
          ...(reply.usage?.cacheRead === undefined ? {} : { prompt_tokens_details: { cached_tokens: reply.usage.cacheRead } })
        }
      }),
      "data: [DONE]\n\n"
    ]
  }
}

/** A Responses stream of `reply` (no reasoning); `input` is all input tokens, `cacheRead` the cached part of them. */
export const responsesReply = (reply: FakeReply): WireResponse => {
  const rs = (type: string, fields: Record<string, unknown>) => event(type, { type, ...fields })
  const usage = reply.usage ?? { input: 10, output: 2 }
  const call = reply.toolCall
  const args = call === undefined ? "" : JSON.stringify(call.arguments)
  return {
    body: [
      rs("response.created", { response: { id: "resp", object: "response", status: "in_progress", output: [] } }),
      ...(reply.text === undefined ? [] : [
        rs("response.output_item.added", { output_index: 0, item: { id: "msg", type: "message", role: "assistant", content: [] } }),
        rs("response.output_text.delta", { item_id: "msg", output_index: 0, content_index: 0, delta: reply.text }),
        rs("response.output_item.done", {
          output_index: 0,
          item: { id: "msg", type: "message", role: "assistant", content: [{ type: "output_text", text: reply.text, annotations: [] }] }
        })
      ]),
      ...(call === undefined ? [] : [
        rs("response.output_item.added", { output_index: 1, item: { id: "fc", type: "function_call", arguments: "", call_id: call.id, name: call.name } }),
        rs("response.function_call_arguments.delta", { item_id: "fc", output_index: 1, delta: args }),
        rs("response.output_item.done", { output_index: 1, item: { id: "fc", type: "function_call", arguments: args, call_id: call.id, name: call.name } })
      ]),
      rs("response.completed", {
        response: {
          id: "resp",
          object: "response",
          status: "completed",
          output: [],
          usage: {
            input_tokens: usage.input,
            output_tokens: usage.output,
            ...(usage.cacheRead === undefined ? {} : { input_tokens_details: { cached_tokens: usage.cacheRead } })
          }
        }
      })
    ]
  }
}
