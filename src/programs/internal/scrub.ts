/**
 * Known secrets (`Secrets`) kept out of the model and out of the log. They are scrubbed at the doors
 * text passes:
 *
 * - into the model: every request, whatever built it (the system prompt with its context files,
 *   user input, hook messages, a summary's transcript), through the provider the engine holds;
 * - out of the model: each streamed chunk, and the whole reply (text, reasoning, tool-call
 *   arguments) before hooks, events, tools or the history see it;
 * - into the log: every message a turn commits.
 *
 * Tool results are scrubbed as they leave the tool (`executeTools.ts`). Provider blocks (signed
 * thinking, encrypted reasoning) go back as they came: changing them breaks their signature.
 * Messages are immutable, so a message found clean is remembered and not scanned again on the
 * next iteration (until a new secret is registered).
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as Message from "../../domain/Message.ts"
import type { ProviderError } from "../../domain/errors.ts"
import type { ProviderChunk, ProviderRequest } from "../../domain/Provider.ts"
import type { ProviderShape, WholeReply } from "../../services/Provider.ts"
import type { SecretsShape } from "../../services/Secrets.ts"

/** Scrubs messages, remembering the ones found clean while no new secret is registered. */
export interface Scrubber {
  readonly message: <M extends Message.Message>(message: M) => M
  readonly messages: <M extends Message.Message>(messages: ReadonlyArray<M>) => ReadonlyArray<M>
}

const scrubCalls = (calls: ReadonlyArray<Message.ToolCall>, scrub: (text: string) => string) => {
  let changed = false
  const out = calls.map((call) => {
    const args = scrub(call.arguments)
    if (args === call.arguments) return call
    changed = true
    return { ...call, arguments: args }
  })
  return changed ? out : calls
}

/** Whether scrubbing changed no string of `before` (parts are rebuilt either way). */
const sameContent = (before: Message.Content, after: Message.Content): boolean => {
  if (typeof before === "string" || typeof after === "string") return before === after
  return after.every((part, i) => {
    const was = before[i]!
    if (part.type === "text") return was.type === "text" && part.text === was.text
    return !("url" in part) || ("url" in was && part.url === was.url)
  })
}

/** `message` with every known secret replaced in its text, tool-call arguments and reasoning; itself when clean. */
const scrubOne = <M extends Message.Message>(message: M, scrub: (text: string) => string): M => {
  switch (message.role) {
    case "system": {
      const content = scrub(message.content)
      return content === message.content ? message : { ...message, content }
    }
    case "user":
    case "tool": {
      const content = Message.mapStrings(message.content, scrub)
      return sameContent(message.content, content) ? message : { ...message, content }
    }
    case "assistant": {
      const content = scrub(message.content)
      const reasoning = message.reasoning === undefined ? undefined : scrub(message.reasoning)
      const toolCalls = message.toolCalls === undefined ? undefined : scrubCalls(message.toolCalls, scrub)
      if (content === message.content && reasoning === message.reasoning && toolCalls === message.toolCalls) return message
      return {
        ...message,
        content,
        ...(reasoning === undefined ? {} : { reasoning }),
        ...(toolCalls === undefined ? {} : { toolCalls })
      }
    }
  }
  return message
}

/** A scrubber over `secrets`. */
export const make = (secrets: SecretsShape): Scrubber => {
  let clean = new WeakSet<object>()
  let known = secrets.size()
  const message = <M extends Message.Message>(m: M): M => {
    const size = secrets.size()
    if (size === 0) return m
    if (size !== known) {
      clean = new WeakSet()
      known = size
    }
    if (clean.has(m)) return m
    const out = scrubOne(m, secrets.scrub)
    clean.add(out)
    return out
  }
  const messages = <M extends Message.Message>(ms: ReadonlyArray<M>): ReadonlyArray<M> => {
    if (secrets.size() === 0) return ms
    let out: Array<M> | undefined
    for (let i = 0; i < ms.length; i++) {
      const m = message(ms[i]!)
      if (m !== ms[i] && out === undefined) out = ms.slice(0, i)
      if (out !== undefined) out.push(m)
    }
    return out ?? ms
  }
  return { message, messages }
}

/** `request` with its messages scrubbed. */
export const request = (scrubber: Scrubber, request: ProviderRequest): ProviderRequest => {
  const messages = scrubber.messages(request.messages)
  return messages === request.messages ? request : { ...request, messages }
}

/** A chunk with its text scrubbed (a secret split across two chunks is caught in the whole reply, see `reply`). */
const scrubChunk = (scrub: (text: string) => string) => (chunk: ProviderChunk): ProviderChunk => {
  switch (chunk._tag) {
    case "TextDelta":
    case "ReasoningDelta": {
      const text = scrub(chunk.text)
      return text === chunk.text ? chunk : { ...chunk, text }
    }
    case "ToolCallDelta": {
      const argumentsDelta = scrub(chunk.argumentsDelta)
      return argumentsDelta === chunk.argumentsDelta ? chunk : { ...chunk, argumentsDelta }
    }
    default:
      return chunk
  }
}

/**
 * `provider` whose every request is scrubbed first, so nothing a secret is known of reaches the
 * model, and whose chunks are scrubbed as they arrive (the `LLMDelta` events). A provider that
 * gives whole replies (`whole`) still does.
 */
export const provider = (provider: ProviderShape, scrubber: Scrubber, secrets: SecretsShape): ProviderShape => {
  const chunks = (stream: Stream.Stream<ProviderChunk, ProviderError>) =>
    secrets.size() === 0 ? stream : Stream.map(stream, scrubChunk(secrets.scrub))
  const whole = provider.whole
  return {
    ...(provider.name === undefined ? {} : { name: provider.name }),
    stream: (r) => {
      const stream = provider.stream(request(scrubber, r))
      return secrets.size() === 0 ? stream : Stream.map(stream, scrubChunk(secrets.scrub))
    },
    ...(whole === undefined ? {} : {
      whole: (r: ProviderRequest) =>
        Effect.map(whole(request(scrubber, r)), (reply): WholeReply =>
          secrets.size() === 0 ? reply : Stream.isStream(reply) ? chunks(reply) : reply.map(scrubChunk(secrets.scrub)))
    })
  }
}

/** A model's reply with every known secret replaced: its text, reasoning and tool-call arguments. */
export const reply = <R extends { readonly content: string; readonly reasoning: string; readonly toolCalls: ReadonlyArray<Message.ToolCall> }>(
  secrets: SecretsShape,
  r: R
): R => {
  if (secrets.size() === 0) return r
  const content = secrets.scrub(r.content)
  const reasoning = secrets.scrub(r.reasoning)
  const toolCalls = scrubCalls(r.toolCalls, secrets.scrub)
  return content === r.content && reasoning === r.reasoning && toolCalls === r.toolCalls ? r : { ...r, content, reasoning, toolCalls }
}
