/**
 * Conversation messages: the history a turn reads and extends.
 *
 * @example
 * ```ts
 * import { Message } from "effect-agent-loop"
 * const history = [Message.system("Be brief."), Message.user("hi")]
 * ```
 */
import { Schema } from "effect"

/** A tool call as the model produced it; `arguments` is the raw JSON text. */
export const ToolCall = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  arguments: Schema.String
})
export type ToolCall = typeof ToolCall.Type

/** The system prompt. */
export const SystemMessage = Schema.Struct({
  role: Schema.Literal("system"),
  content: Schema.String
})
export type SystemMessage = typeof SystemMessage.Type

/** Input from the user (also steering, follow-ups, hook feedback). */
export const UserMessage = Schema.Struct({
  role: Schema.Literal("user"),
  content: Schema.String
})
export type UserMessage = typeof UserMessage.Type

/**
 * A reply of the model. `partial` marks text that arrived before the provider
 * failed, kept so that nothing the user saw is lost.
 */
export const AssistantMessage = Schema.Struct({
  role: Schema.Literal("assistant"),
  content: Schema.String,
  reasoning: Schema.optionalKey(Schema.String),
  toolCalls: Schema.optionalKey(Schema.Array(ToolCall)),
  partial: Schema.optionalKey(Schema.Boolean)
})
export type AssistantMessage = typeof AssistantMessage.Type

/** The result of one tool call, answering the call with the same id. */
export const ToolResultMessage = Schema.Struct({
  role: Schema.Literal("tool"),
  toolCallId: Schema.String,
  toolName: Schema.String,
  content: Schema.String,
  isError: Schema.optionalKey(Schema.Boolean)
})
export type ToolResultMessage = typeof ToolResultMessage.Type

/** Any message of a conversation. */
export const Message = Schema.Union([SystemMessage, UserMessage, AssistantMessage, ToolResultMessage])
export type Message = typeof Message.Type

/** Builds a system message. */
export const system = (content: string): SystemMessage => ({ role: "system", content })

/** Builds a user message. */
export const user = (content: string): UserMessage => ({ role: "user", content })

/** Builds an assistant message; tool calls are omitted when there are none. */
export const assistant = (
  content: string,
  toolCalls: ReadonlyArray<ToolCall> = [],
  extra: { readonly reasoning?: string; readonly partial?: boolean } = {}
): AssistantMessage => ({
  role: "assistant",
  content,
  ...(toolCalls.length > 0 ? { toolCalls } : {}),
  ...(extra.reasoning ? { reasoning: extra.reasoning } : {}),
  ...(extra.partial ? { partial: true } : {})
})

/** Builds a tool result message. */
export const toolResult = (
  call: { readonly id: string; readonly name: string },
  content: string,
  isError = false
): ToolResultMessage => ({
  role: "tool",
  toolCallId: call.id,
  toolName: call.name,
  content,
  ...(isError ? { isError: true } : {})
})

/** The number of characters ("runes") of a message, the unit of the context budget. */
export const runes = (message: Message): number => {
  switch (message.role) {
    case "assistant":
      return message.content.length +
        (message.toolCalls ?? []).reduce((n, c) => n + c.name.length + c.arguments.length, 0)
    default:
      return message.content.length
  }
}
