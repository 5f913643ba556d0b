/**
 * `Scripted`: a deterministic provider for tests and demos.
 *
 * Responses come from a list (one per call, in order) or from a function of the request. Each may
 * wait on the Clock before it starts (`delay`) and between its chunks (`chunkDelay`), fail with a
 * provider error, die, or never finish (`stall`). Every request is recorded in `ScriptedLog`
 * (sharing the messages consecutive requests have in common).
 *
 * @example
 * ```ts
 * import { Scripted } from "effect-agent-loop"
 *
 * const provider = Scripted.layer([
 *   { toolCalls: [{ name: "read_file", arguments: { path: "README.md" } }] },
 *   { content: ["It is ", "a README."], delay: "100 millis" }
 * ])
 * ```
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { ProviderRejected, type ProviderError } from "../../domain/errors.ts"
import type { Message, ProviderBlock } from "../../domain/Message.ts"
import type { FinishReason, ProviderChunk, ProviderRequest } from "../../domain/Provider.ts"
import type { Usage } from "../../domain/Usage.ts"
import { chunksOfReply, Provider, type ProviderShape, type WholeReply } from "../../services/Provider.ts"

/** A tool call in a script; object arguments are sent as JSON, strings as they are. */
export interface ScriptedToolCall {
  readonly name: string
  readonly arguments?: unknown
  readonly id?: string
}

/** One scripted response. */
export interface ScriptedResponse {
  /** Text, as one delta or as the given pieces. */
  readonly content?: string | ReadonlyArray<string>
  readonly reasoning?: string
  /** Provider data the reply carries (signed thinking, reasoning items): kept on the assistant message. */
  readonly providerBlocks?: ReadonlyArray<ProviderBlock>
  readonly toolCalls?: ReadonlyArray<ScriptedToolCall>
  /** A typed final answer: a call of the request's answer tool (`respond`) with this value, after `toolCalls`. */
  readonly output?: unknown
  readonly finishReason?: FinishReason
  readonly usage?: Usage
  /** Raw chunks, sent instead of the fields above. */
  readonly chunks?: ReadonlyArray<ProviderChunk>
  /** Wait before the first chunk. */
  readonly delay?: Duration.Input
  /** Wait between chunks. */
  readonly chunkDelay?: Duration.Input
  /** Fail with this error (after `delay`, before any chunk). */
  readonly error?: ProviderError
  /** Fail after the chunks were sent (a stream that broke mid-way). */
  readonly errorAfterChunks?: ProviderError
  /** Die with this defect. */
  readonly die?: unknown
  /** Send the chunks, then never finish. */
  readonly stall?: boolean
}

/** A script: a list consumed in order, or a function of the request and the call's index (from 0). */
export type Script =
  | ReadonlyArray<ScriptedResponse>
  | ((request: ProviderRequest, index: number) => ScriptedResponse)

/** The requests a scripted provider received. */
export class ScriptedLog extends Context.Service<ScriptedLog, {
  readonly requests: Effect.Effect<ReadonlyArray<ProviderRequest>>
}>()("effect-agent-loop/ScriptedLog") {}

const argumentsText = (value: unknown): string =>
  value === undefined ? "{}" : typeof value === "string" ? value : JSON.stringify(value)

/** The chunks a response streams, for call number `index`; `outputTool` names the answer tool of `output`. */
export const chunksOf = (response: ScriptedResponse, index: number, outputTool = "respond"): ReadonlyArray<ProviderChunk> =>
  response.chunks ?? chunksOfReply({
    ...response,
    toolCalls: [
      ...(response.toolCalls ?? []),
      ...(response.output === undefined ? [] : [{ name: outputTool, arguments: response.output }])
    ].map((call, i) => ({
      id: call.id ?? `call_${index}_${i}`,
      name: call.name,
      arguments: argumentsText(call.arguments)
    }))
  })

/**
 * What call number `index` answers: its chunks, whole, unless they are paced, broken off or
 * stalled (then a stream of them); first the `delay`, an `error` or a defect.
 */
const replyOf = (response: ScriptedResponse, index: number, request: ProviderRequest): Effect.Effect<WholeReply, ProviderError> => {
  const chunks = chunksOf(response, index, request.output?.name)
  const streamed = response.chunkDelay !== undefined || response.errorAfterChunks !== undefined || response.stall === true
  const start: Effect.Effect<WholeReply, ProviderError> = response.error
    ? Effect.fail(response.error)
    : response.die !== undefined
    ? Effect.die(response.die)
    : Effect.succeed(streamed ? streamOf(response, chunks) : chunks)
  return response.delay === undefined ? start : Effect.andThen(Effect.sleep(response.delay), start)
}

/** The chunks as a stream, paced by `chunkDelay`, then failing or stalling as the response says. */
const streamOf = (response: ScriptedResponse, chunks: ReadonlyArray<ProviderChunk>): Stream.Stream<ProviderChunk, ProviderError> => {
  const all = Stream.fromArray(chunks)
  const paced = response.chunkDelay === undefined
    ? all
    : Stream.mapEffect(all, (chunk) => Effect.as(Effect.sleep(response.chunkDelay!), chunk))
  return response.errorAfterChunks
    ? Stream.concat(paced, Stream.fail(response.errorAfterChunks))
    : response.stall
    ? Stream.concat(paced, Stream.never)
    : paced
}

/**
 * The requests a provider received, kept without a copy of the conversation per request: each
 * request of a turn holds the one before it plus what was added, so consecutive requests share
 * their common prefix of messages (one array, appended to). A log of a long turn then grows with
 * the conversation, not with its square; a request that does not extend the one before (a
 * compression, a retry's extra messages) starts a new array from their common prefix.
 */
const requestLog = () => {
  const records: Array<{ readonly request: Omit<ProviderRequest, "messages">; readonly messages: ReadonlyArray<Message>; readonly length: number }> = []
  let shared: Array<Message> = []
  return {
    /** Records `request`; returns its index. */
    add: (request: ProviderRequest): number => {
      const { messages, ...rest } = request
      const limit = Math.min(shared.length, messages.length)
      let common = 0
      while (common < limit && shared[common] === messages[common]) common++
      if (common < shared.length) shared = shared.slice(0, common)
      for (let i = common; i < messages.length; i++) shared.push(messages[i]!)
      return records.push({ request: rest, messages: shared, length: messages.length }) - 1
    },
    /** Every request; each one's messages are copied out when read (reading them all costs what keeping them all would). */
    all: (): ReadonlyArray<ProviderRequest> =>
      records.map((r) => ({
        ...r.request,
        get messages() {
          return r.messages.slice(0, r.length)
        }
      }))
  }
}

/** A scripted provider and the log of what it received. */
export const make = (script: Script) =>
  Effect.sync(() => {
    const requests = requestLog()
    const provider: ProviderShape = Provider.fromWhole((request) =>
      Effect.suspend(() => {
        const index = requests.add(request)
        const response = typeof script === "function" ? script(request, index) : script[index]
        return response === undefined
          ? Effect.fail(new ProviderRejected({ message: `Scripted provider has no response for call ${index + 1}` }))
          : replyOf(response, index, request)
      })
    )
    return { provider, log: { requests: Effect.sync(requests.all) } }
  })

/** The scripted provider as a layer, with its `ScriptedLog`. */
export const layer = (script: Script): Layer.Layer<Provider | ScriptedLog> =>
  Layer.effectContext(Effect.map(make(script), ({ log, provider }) =>
    Context.make(Provider, provider).pipe(Context.add(ScriptedLog, log))))
