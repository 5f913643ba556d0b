/**
 * A2A v1.0 on the wire, as `@a2a-js/sdk` speaks it over JSON-RPC: the JSON shapes of messages,
 * parts, tasks, their status and artifacts, the stream's events, the agent card, and the error
 * codes. What comes in is decoded by Schemas; what goes out is built as plain JSON here (pure).
 *
 * The JSON is the protocol's ProtoJSON: camelCase fields, enums as their names
 * (`TASK_STATE_COMPLETED`, `ROLE_USER`), a part is whichever of `text`, `data`, `url` or `raw` it has.
 */
import { randomUUID } from "node:crypto"
import * as Cause from "effect/Cause"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"

/** The protocol version served (the `A2A-Version` header; an interface's `protocolVersion`). */
export const PROTOCOL_VERSION = "1.0"

/** JSON-RPC's and A2A's error codes. */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  TaskNotFound: -32001,
  TaskNotCancelable: -32002,
  PushNotificationNotSupported: -32003,
  UnsupportedOperation: -32004,
  VersionNotSupported: -32009
} as const

/** An error answer: a JSON-RPC error object. */
export class RpcError {
  readonly code: number
  readonly message: string
  readonly data: unknown
  constructor(code: number, message: string, data?: unknown) {
    this.code = code
    this.message = message
    this.data = data
  }
}

/** The task's states, as the wire names them. */
export type TaskState =
  | "TASK_STATE_SUBMITTED"
  | "TASK_STATE_WORKING"
  | "TASK_STATE_INPUT_REQUIRED"
  | "TASK_STATE_COMPLETED"
  | "TASK_STATE_FAILED"
  | "TASK_STATE_CANCELED"
  | "TASK_STATE_REJECTED"

/** States a task never leaves. */
export const isTerminal = (state: TaskState): boolean =>
  state === "TASK_STATE_COMPLETED" || state === "TASK_STATE_FAILED" || state === "TASK_STATE_CANCELED" || state === "TASK_STATE_REJECTED"

/** States that end a stream or a blocking send: terminal ones, and a task waiting for its client. */
export const isSettled = (state: TaskState): boolean => isTerminal(state) || state === "TASK_STATE_INPUT_REQUIRED"

const Metadata = Schema.Record(Schema.String, Schema.Unknown)

/** A part: text, structured data, a file by URL or inline (base64). */
export const Part = Schema.Struct({
  text: Schema.optionalKey(Schema.String),
  data: Schema.optionalKey(Schema.Unknown),
  url: Schema.optionalKey(Schema.String),
  raw: Schema.optionalKey(Schema.String),
  filename: Schema.optionalKey(Schema.String),
  mediaType: Schema.optionalKey(Schema.String),
  metadata: Schema.optionalKey(Metadata)
})
export type Part = typeof Part.Type

/** A message of the client or the agent. */
export const Message = Schema.Struct({
  messageId: Schema.NonEmptyString,
  contextId: Schema.optionalKey(Schema.String),
  taskId: Schema.optionalKey(Schema.String),
  role: Schema.Literals(["ROLE_USER", "ROLE_AGENT"]),
  parts: Schema.Array(Part),
  metadata: Schema.optionalKey(Metadata),
  extensions: Schema.optionalKey(Schema.Array(Schema.String)),
  referenceTaskIds: Schema.optionalKey(Schema.Array(Schema.String))
})
export type Message = typeof Message.Type

/** `SendMessage` and `SendStreamingMessage`'s params. */
export const SendMessageParams = Schema.Struct({
  tenant: Schema.optionalKey(Schema.String),
  message: Message,
  configuration: Schema.optionalKey(Schema.Struct({
    acceptedOutputModes: Schema.optionalKey(Schema.Array(Schema.String)),
    historyLength: Schema.optionalKey(Schema.Number),
    returnImmediately: Schema.optionalKey(Schema.Boolean),
    taskPushNotificationConfig: Schema.optionalKey(Schema.Unknown)
  })),
  metadata: Schema.optionalKey(Metadata)
})
export type SendMessageParams = typeof SendMessageParams.Type

/** `GetTask`'s params. */
export const GetTaskParams = Schema.Struct({
  tenant: Schema.optionalKey(Schema.String),
  id: Schema.NonEmptyString,
  historyLength: Schema.optionalKey(Schema.Number)
})

/** `CancelTask`'s params. */
export const CancelTaskParams = Schema.Struct({
  tenant: Schema.optionalKey(Schema.String),
  id: Schema.NonEmptyString,
  metadata: Schema.optionalKey(Metadata)
})

/** A JSON-RPC 2.0 request. */
export const RpcRequest = Schema.Struct({
  jsonrpc: Schema.Literal("2.0"),
  method: Schema.NonEmptyString,
  id: Schema.optionalKey(Schema.Union([Schema.String, Schema.Number.check(Schema.isInt()), Schema.Null])),
  params: Schema.optionalKey(Schema.Unknown)
})
export type RpcRequest = typeof RpcRequest.Type

/** Decodes `input` with `schema`, or fails with `code` and the Schema's words on what is wrong. */
export const decode = <S extends Schema.Decoder<unknown>>(schema: S, input: unknown, code: number, what: string): S["Type"] => {
  const exit = Schema.decodeUnknownExit(schema)(input)
  if (Exit.isSuccess(exit)) return exit.value
  const error = Cause.squash(exit.cause)
  throw new RpcError(code, `${what}: ${error instanceof Error ? error.message : String(error)}`)
}

/** A task's status. */
export interface TaskStatus {
  readonly state: TaskState
  readonly message?: Message
  readonly timestamp: string
}

/** An output of a task. */
export interface Artifact {
  readonly artifactId: string
  readonly name?: string
  readonly description?: string
  readonly parts: ReadonlyArray<Part>
}

/** A task as the wire carries it. */
export interface Task {
  readonly id: string
  readonly contextId: string
  readonly status: TaskStatus
  readonly artifacts?: ReadonlyArray<Artifact>
  readonly history?: ReadonlyArray<Message>
  readonly metadata?: Record<string, unknown>
}

/** One event of a stream (`StreamResponse`): exactly one of its fields. */
export type StreamEvent =
  | { readonly task: Task }
  | { readonly message: Message }
  | { readonly statusUpdate: { readonly taskId: string; readonly contextId: string; readonly status: TaskStatus; readonly metadata?: Record<string, unknown> } }
  | {
    readonly artifactUpdate: {
      readonly taskId: string
      readonly contextId: string
      readonly artifact: Artifact
      readonly append?: boolean
      readonly lastChunk?: boolean
    }
  }

/** The texts of a message's text parts, joined by new lines. */
export const textOf = (parts: ReadonlyArray<Part>): string => parts.flatMap((part) => part.text === undefined ? [] : [part.text]).join("\n")

/** An approval's answer, from a message's parts. */
export const decisionOf = (parts: ReadonlyArray<Part>): { readonly decision: "allow" | "deny"; readonly reason?: string; readonly approvalId?: string } | undefined => {
  for (const part of parts) {
    const data = part.data as { decision?: unknown; reason?: unknown; approvalId?: unknown } | undefined
    if (data !== undefined && data !== null && typeof data === "object" && typeof data.decision === "string") {
      const word = data.decision.toLowerCase()
      const decision = word === "approve" || word === "allow" ? "allow" : word === "deny" || word === "reject" ? "deny" : undefined
      if (decision === undefined) return undefined
      return {
        decision,
        ...(typeof data.reason === "string" ? { reason: data.reason } : {}),
        ...(typeof data.approvalId === "string" ? { approvalId: data.approvalId } : {})
      }
    }
  }
  const text = textOf(parts).trim()
  if (/^(approve|allow)[.!]?$/i.test(text)) return { decision: "allow" }
  const denied = /^(deny|reject)\b[\s:.!-]*([\s\S]*)$/i.exec(text)
  if (denied !== null) return { decision: "deny", ...(denied[2]!.trim() === "" ? {} : { reason: denied[2]!.trim() }) }
  return undefined
}

/** The input of a turn: text parts as they are, data parts as JSON, files by their URL. */
export const inputOf = (parts: ReadonlyArray<Part>): string =>
  parts.flatMap((part) =>
    part.text !== undefined ? [part.text] : part.data !== undefined ? [JSON.stringify(part.data)] : part.url !== undefined ? [`@${part.url}`] : []
  ).join("\n")

/** A message of the agent on a task. */
export const agentMessage = (task: { readonly id: string; readonly contextId: string }, parts: ReadonlyArray<Part>): Message => ({
  messageId: randomUUID(),
  contextId: task.contextId,
  taskId: task.id,
  role: "ROLE_AGENT",
  parts
})

/** What an `input-required` status says: the call that waits, in words and as data. */
export const approvalRequest = (
  task: { readonly id: string; readonly contextId: string },
  approval: { readonly id: string; readonly toolCallId: string; readonly toolName: string; readonly arguments: unknown }
): Message =>
  agentMessage(task, [
    { text: `${approval.toolName} needs approval: ${JSON.stringify(approval.arguments ?? {})}. Answer "approve" or "deny" (a message on this task).` },
    { data: { approval: { id: approval.id, toolCallId: approval.toolCallId, toolName: approval.toolName, arguments: approval.arguments } } }
  ])

/** What the agent card says of the agent. */
export interface CardOptions {
  readonly name: string
  readonly description: string
  readonly version: string
  /** The JSON-RPC endpoint's absolute URL. */
  readonly url: string
}

/**
 * The agent card (`/.well-known/agent-card.json`): one JSON-RPC interface, streaming, no push
 * notifications, and the bearer token every call needs (the card itself is public).
 */
export const agentCard = (options: CardOptions) => ({
  name: options.name,
  description: options.description,
  version: options.version,
  supportedInterfaces: [{ url: options.url, protocolBinding: "JSONRPC", protocolVersion: PROTOCOL_VERSION }],
  capabilities: { streaming: true, pushNotifications: false, extendedAgentCard: false },
  securitySchemes: {
    bearer: {
      httpAuthSecurityScheme: {
        scheme: "Bearer",
        description: "The token of `agent-loop serve` (the same as its HTTP API's): Authorization: Bearer TOKEN"
      }
    }
  },
  securityRequirements: [{ schemes: { bearer: { list: [] } } }],
  defaultInputModes: ["text/plain", "application/json"],
  defaultOutputModes: ["text/plain", "application/json"],
  skills: [{
    id: "agent-loop",
    name: "Agent loop",
    description:
      "A turn of the agent loop on the task's context (one session per contextId): it may read, edit and run commands with its tools. A tool call that needs approval puts the task in input-required: answer approve or deny on the same task.",
    tags: ["agent", "coding", "tools"],
    examples: ["What is in this directory?"],
    inputModes: ["text/plain", "application/json"],
    outputModes: ["text/plain", "application/json"]
  }]
})
