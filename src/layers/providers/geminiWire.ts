/**
 * The Gemini wire format (`generateContent` and `streamGenerateContent?alt=sse`, on Google's
 * Gemini API and on Vertex AI): the request body (the system prompt as `systemInstruction`, the
 * conversation as `user` and `model` contents of parts, tools as `functionDeclarations`) and the
 * decoder of its stream of `GenerateContentResponse` objects.
 *
 * Thought signatures: Gemini signs its reasoning on the parts of a reply (a thought summary, the
 * text, the first of its function calls) and wants each signature back on the same part when the
 * conversation goes on; Gemini 3 refuses function calls sent back without theirs. They are kept on
 * the reply as one provider block and put back on the parts they came on.
 */
import type * as Sse from "effect/encoding/Sse"
import { MalformedResponse, type ProviderError, ProviderRejected } from "../../domain/errors.ts"
import {
  type AssistantMessage,
  blockFor,
  type Content,
  type ContentPart,
  type ImagePart,
  inlineOf,
  type Message,
  type ToolResultMessage
} from "../../domain/Message.ts"
import { budgetForEffort } from "../../domain/ModelOptions.ts"
import type { FinishReason, ProviderChunk, ProviderRequest } from "../../domain/Provider.ts"
import { jsonTooDeep, MAX_JSON_DEPTH } from "../../domain/text.ts"
import type { Usage } from "../../domain/Usage.ts"
import { geminiParameters, geminiSchema } from "./geminiSchema.ts"
import { describeJson, fromStreamError } from "./httpErrors.ts"
import { excerpt, numberAt, objectAt, parseObject, type Step, stringAt, type WireDecoder } from "./sse.ts"

/** The `provider` of the blocks this wire keeps on Google's Gemini API (`AssistantMessage.providerBlocks`). */
export const PROVIDER = "gemini"

type Part = Record<string, unknown>

/** What a reply's provider block holds: the signatures of its parts, and the ids of its calls that the API gave. */
interface Kept {
  /** Thought summaries that came signed, as they came. */
  readonly thoughts?: ReadonlyArray<{ readonly text: string; readonly thoughtSignature: string }>
  readonly textSignature?: string
  /** The reply's function calls in order: the id (`given` when the API sent it) and the signature. */
  readonly calls?: ReadonlyArray<{ readonly id: string; readonly given: boolean; readonly thoughtSignature?: string }>
}

/**
 * The signature that tells Gemini 3 a function call was not made by it (history from another
 * model, a call a hook added), which Google documents for exactly this case: without a signature
 * such a call is refused.
 */
export const SKIP_SIGNATURE = "skip_thought_signature_validator"

/** The major version of a Gemini model name (`gemini-3-pro-preview` → 3); `undefined` for other names. */
export const geminiMajor = (model: string): number | undefined => {
  const match = /(?:^|\/)gemini-(?:live-)?(\d+)/.exec(model.toLowerCase())
  return match ? Number(match[1]) : undefined
}

/** Whether the model takes images inside a function response (Gemini 3 does; 2.x wants them as parts beside it). */
const nestsResultImages = (model: string): boolean => (geminiMajor(model) ?? 3) >= 3

/** A media type from an image URL's extension, for `fileData`, which needs one. */
const mediaTypeOfUrl = (url: string): string => {
  const ext = /\.([a-z0-9]+)(?:[?#]|$)/i.exec(url)?.[1]?.toLowerCase()
  return ext === "jpg" || ext === "jpeg" ? "image/jpeg" : ext === "gif" ? "image/gif" : ext === "webp" ? "image/webp" : "image/png"
}

/** An image as a part: bytes as `inlineData`, a URL as `fileData`. */
const imagePart = (part: ImagePart): Part => {
  const inline = inlineOf(part)
  if (inline) return { inlineData: { mimeType: inline.mediaType, data: inline.data } }
  const url = (part as { readonly url: string; readonly mediaType?: string })
  return { fileData: { mimeType: url.mediaType ?? mediaTypeOfUrl(url.url), fileUri: url.url } }
}

/** Content as parts; the API refuses empty text parts, so those go. */
const partsOf = (content: Content): Array<Part> =>
  typeof content === "string"
    ? (content === "" ? [] : [{ text: content }])
    : content.flatMap((part: ContentPart) => part.type === "text" ? (part.text === "" ? [] : [{ text: part.text }]) : [imagePart(part)])

const keptOf = (message: AssistantMessage, provider: string, model: string): Kept | undefined => {
  const block = message.providerBlocks?.find((b) => blockFor(b, provider, model))
  return block?.data as Kept | undefined
}

/** The arguments of a call as an object (the API's `args`); text that is not an object is sent as `{}`. */
/** The nesting of an event around a call's `args` (`candidates` → … → `functionCall` → `args`). */
const EVENT_DEPTH = 8

const argsOf = (text: string): Record<string, unknown> => {
  // deeper arguments were refused by the loop; serialising them would overflow the stack
  if (jsonTooDeep(text)) return {}
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : {}
  } catch {
    return {}
  }
}

/** The parts of a reply: signed thoughts, the text, the calls, each with the signature it came with. */
const replyParts = (message: AssistantMessage, kept: Kept | undefined, model: string, toolsAsText: boolean): Array<Part> => {
  const calls = message.toolCalls ?? []
  const parts: Array<Part> = (kept?.thoughts ?? []).map((thought) => ({ text: thought.text, thought: true, thoughtSignature: thought.thoughtSignature }))
  if (message.content !== "") {
    parts.push({ text: message.content, ...(kept?.textSignature === undefined ? {} : { thoughtSignature: kept.textSignature }) })
  }
  if (toolsAsText) {
    for (const call of calls) parts.push({ text: `[called tool ${call.name} with ${call.arguments.trim() === "" ? "{}" : call.arguments}]` })
    return parts
  }
  const unsigned = (geminiMajor(model) ?? 0) >= 3 && !calls.some((call) => kept?.calls?.find((k) => k.id === call.id)?.thoughtSignature)
  calls.forEach((call, i) => {
    const known = kept?.calls?.find((k) => k.id === call.id)
    const signature = known?.thoughtSignature ?? (unsigned && i === 0 ? SKIP_SIGNATURE : undefined)
    parts.push({
      functionCall: { ...(known?.given ? { id: call.id } : {}), name: call.name, args: argsOf(call.arguments) },
      ...(signature === undefined ? {} : { thoughtSignature: signature })
    })
  })
  return parts
}

/** What the official clients write in a function response that is only images. */
export const IMAGE_ONLY_RESULT = "(see attached image)"

/** A tool result as a `functionResponse` part, and the images that go beside it on models that take none inside. */
const resultParts = (message: ToolResultMessage, id: string | undefined, model: string, toolsAsText: boolean): Array<Part> => {
  const content = message.content
  const images = typeof content === "string" ? [] : content.flatMap((part) => part.type === "image" ? [imagePart(part)] : [])
  const text = typeof content === "string" ? content : content.flatMap((part) => part.type === "text" ? [part.text] : []).join("\n")
  if (toolsAsText) return [{ text: `[${message.isError ? "error from" : "result of"} tool ${message.toolName}]\n${text}` }, ...images]
  const value = text === "" && images.length > 0 ? IMAGE_ONLY_RESULT : text
  const nested = images.length > 0 && nestsResultImages(model)
  return [
    {
      functionResponse: {
        ...(id === undefined ? {} : { id }),
        name: message.toolName,
        response: message.isError ? { error: value } : { output: value },
        ...(nested ? { parts: images } : {})
      }
    },
    ...(nested ? [] : images)
  ]
}

/**
 * The conversation as contents, for `model` (system messages go to `systemInstruction`). Messages
 * of one role in a row merge into one content: the function responses answering a reply, then
 * any steering after them. A reply's kept signatures and ids go back only to the model (and wire)
 * that made them. `toolsAsText` renders calls and results as text, for a request without tools.
 */
export const toContents = (messages: ReadonlyArray<Message>, model: string, provider = PROVIDER, toolsAsText = false) => {
  const out: Array<{ role: "user" | "model"; parts: Array<Part> }> = []
  /** The ids the API gave, by call id: a function response carries its call's id when the call had one. */
  const given = new Set<string>()
  for (const message of messages) {
    let parts: Array<Part>
    switch (message.role) {
      case "system":
        continue
      case "user":
        parts = partsOf(message.content)
        break
      case "assistant": {
        const kept = keptOf(message, provider, model)
        for (const call of kept?.calls ?? []) if (call.given) given.add(call.id)
        parts = replyParts(message, kept, model, toolsAsText)
        break
      }
      case "tool":
        parts = resultParts(message, given.has(message.toolCallId) ? message.toolCallId : undefined, model, toolsAsText)
    }
    if (parts.length === 0) continue
    const role = message.role === "assistant" ? "model" : "user"
    const last = out.at(-1)
    if (last?.role === role) last.parts.push(...parts)
    else out.push({ role, parts })
  }
  return out
}

/**
 * How a typed answer is asked for: `native` with `responseMimeType: application/json` and
 * `responseSchema` (the answer tool is dropped and the reply's text is the answer), or `tool` with
 * the answer tool the loop offers, forced with `functionCallingConfig` when due. `auto`, the
 * default: native where the API takes it together with function calling (Gemini 3 and later), or
 * when the request has no other tools; the tool otherwise (Gemini 2.x refuses a JSON response
 * type beside function declarations).
 */
export type StructuredOutput = "auto" | "native" | "tool"

const outputMode = (request: ProviderRequest, mode: StructuredOutput): "native" | "tool" => {
  if (mode !== "auto") return mode
  const output = request.output
  const others = output === undefined ? request.tools : request.tools.filter((tool) => tool.name !== output.name)
  return others.length === 0 || (geminiMajor(request.model) ?? 3) >= 3 ? "native" : "tool"
}

/**
 * The thinking configuration: `includeThoughts` (thought summaries stream as reasoning) whenever
 * reasoning is asked for, with `reasoning.budgetTokens` as `thinkingBudget`; an `effort` alone is
 * a `thinkingLevel` on Gemini 3 and a budget (`budgetForEffort`) on Gemini 2.x, which has no levels.
 */
export const thinkingConfig = (request: ProviderRequest): Record<string, unknown> | undefined => {
  const reasoning = request.reasoning
  if (reasoning?.budgetTokens !== undefined) return { includeThoughts: true, thinkingBudget: reasoning.budgetTokens }
  if (reasoning?.effort === undefined) return undefined
  return (geminiMajor(request.model) ?? 3) >= 3
    ? { includeThoughts: true, thinkingLevel: reasoning.effort.toUpperCase() }
    : { includeThoughts: true, thinkingBudget: budgetForEffort[reasoning.effort] }
}

/** What the API refuses, said before sending: more than five stop sequences. */
export const check = (request: ProviderRequest): ProviderError | undefined =>
  request.stop !== undefined && request.stop.length > 5
    ? new ProviderRejected({ message: `Gemini: at most 5 stop sequences, got ${request.stop.length}` })
    : undefined

/** How the request is written. */
export interface WireOptions {
  readonly structuredOutput?: StructuredOutput
  /** The `provider` of the blocks sent back; default `gemini`. */
  readonly provider?: string
}

/** The JSON body of a `streamGenerateContent` request. */
export const requestBody = (request: ProviderRequest, options: WireOptions = {}) => {
  const system = request.messages.flatMap((m) => m.role === "system" ? [m.content] : []).join("\n\n")
  const output = request.output
  const mode = output === undefined ? "tool" : outputMode(request, options.structuredOutput ?? "auto")
  const tools = mode === "native" && output !== undefined ? request.tools.filter((tool) => tool.name !== output.name) : request.tools
  const thinking = thinkingConfig(request)
  const generationConfig = {
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    ...(request.topP === undefined ? {} : { topP: request.topP }),
    ...(request.maxTokens === undefined ? {} : { maxOutputTokens: request.maxTokens }),
    ...(request.stop === undefined ? {} : { stopSequences: request.stop }),
    ...(request.seed === undefined ? {} : { seed: request.seed }),
    ...(thinking === undefined ? {} : { thinkingConfig: thinking }),
    ...(mode === "native" && output !== undefined ? { responseMimeType: "application/json", responseSchema: geminiSchema(output.schema) } : {})
  }
  const toolConfig = output?.force !== true || tools.length === 0
    ? undefined
    : mode === "native"
    ? { functionCallingConfig: { mode: "NONE" } }
    : { functionCallingConfig: { mode: "ANY", allowedFunctionNames: [output.name] } }
  return {
    contents: toContents(request.messages, request.model, options.provider ?? PROVIDER, tools.length === 0),
    ...(system === "" ? {} : { systemInstruction: { role: "user", parts: [{ text: system }] } }),
    ...(tools.length === 0 ? {} : {
      tools: [{
        functionDeclarations: tools.map((tool) => {
          const parameters = geminiParameters(tool.parameters)
          return { name: tool.name, description: tool.description, ...(parameters === undefined ? {} : { parameters }) }
        })
      }]
    }),
    ...(toolConfig === undefined ? {} : { toolConfig }),
    ...(Object.keys(generationConfig).length === 0 ? {} : { generationConfig })
  }
}

/** Finish reasons that say the answer was withheld or cut by Google's filters. */
const FILTERED = new Set([
  "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION"
])

/** The library's finish reason for a Gemini `finishReason`; a `STOP` with function calls is `tool_calls`. */
export const finishReason = (reason: string, calls: number): FinishReason =>
  reason === "STOP" ? (calls > 0 ? "tool_calls" : "stop") : reason === "MAX_TOKENS" ? "length" : FILTERED.has(reason) ? "content_filter" : "other"

/**
 * Usage of a `usageMetadata`: `promptTokenCount` counts cached tokens too; thinking tokens
 * (`thoughtsTokenCount`) are billed as output but not counted in `candidatesTokenCount`.
 */
const usageOf = (usage: Record<string, unknown>): Usage => {
  const cached = numberAt(usage, "cachedContentTokenCount")
  const thoughts = numberAt(usage, "thoughtsTokenCount")
  return {
    inputTokens: (numberAt(usage, "promptTokenCount") ?? 0) + (numberAt(usage, "toolUsePromptTokenCount") ?? 0),
    outputTokens: (numberAt(usage, "candidatesTokenCount") ?? 0) + (thoughts ?? 0),
    ...(cached === undefined ? {} : { cachedInputTokens: cached }),
    ...(thoughts === undefined ? {} : { reasoningTokens: thoughts })
  }
}

const asRecord = (u: unknown): Record<string, unknown> | undefined =>
  typeof u === "object" && u !== null && !Array.isArray(u) ? u as Record<string, unknown> : undefined

/** A run of thought summary text, and the signature that closed it. */
interface Thought {
  text: string
  signature: string | undefined
}

/**
 * A decoder for one `streamGenerateContent` response. Each event is a whole response object with
 * the next parts of the first candidate; function calls come whole (their arguments in one piece)
 * and are numbered in order, under the API's id or, when it gives none, one made from the
 * response id. The stream has no terminator: it ends with the body, after the event with the
 * `finishReason`; a body that ends without one was cut off. The kept signatures and ids come as
 * one provider block before the `Finish`.
 */
export const makeDecoder = (provider: string = PROVIDER) => (): WireDecoder => {
  const calls: Array<{ id: string; given: boolean; thoughtSignature?: string }> = []
  const thoughts: Array<Thought> = []
  let open: Thought | undefined
  let textSignature: string | undefined
  let responseId: string | undefined
  let modelVersion: string | undefined
  let usage: Record<string, unknown> | undefined
  let finish: string | undefined
  let finishMessage: string | undefined
  let blocked: string | undefined
  const fallbackPrefix = Math.random().toString(36).slice(2, 10)
  const feed = (event: Sse.Event): Step | ProviderError => {
    // a call's `args` object is serialised again below (recursively): bound its nesting first
    if (jsonTooDeep(event.data, MAX_JSON_DEPTH + EVENT_DEPTH)) {
      return new MalformedResponse({ message: `An event nests deeper than ${MAX_JSON_DEPTH} levels: ${excerpt(event.data)}` })
    }
    const payload = parseObject(event.data)
    if (payload === undefined) return new MalformedResponse({ message: `Invalid JSON in stream: ${excerpt(event.data)}` })
    if (payload["error"] !== undefined) return fromStreamError(describeJson(payload, "error event"))
    responseId ??= stringAt(payload, "responseId")
    modelVersion ??= stringAt(payload, "modelVersion")
    usage = objectAt(payload, "usageMetadata") ?? usage
    blocked ??= stringAt(objectAt(payload, "promptFeedback"), "blockReason")
    const candidates = payload["candidates"]
    const candidate = Array.isArray(candidates) ? asRecord(candidates[0]) : undefined
    const parts = objectAt(candidate, "content")?.["parts"]
    const chunks: Array<ProviderChunk> = []
    for (const value of Array.isArray(parts) ? parts : []) {
      const part = asRecord(value)
      if (part === undefined) continue
      const signature = stringAt(part, "thoughtSignature")
      const call = objectAt(part, "functionCall")
      const text = stringAt(part, "text")
      if (call !== undefined) {
        const name = stringAt(call, "name")
        if (name === undefined) return new MalformedResponse({ message: `functionCall without a name: ${excerpt(event.data)}` })
        const apiId = stringAt(call, "id")
        const index = calls.length
        const id = apiId ?? `call_${responseId ?? fallbackPrefix}_${index}`
        calls.push({ id, given: apiId !== undefined, ...(signature === undefined ? {} : { thoughtSignature: signature }) })
        const args = objectAt(call, "args")
        chunks.push({ _tag: "ToolCallDelta", index, id, name, argumentsDelta: JSON.stringify(args ?? {}) })
      } else if (part["thought"] === true) {
        if (open === undefined) thoughts.push(open = { text: "", signature: undefined })
        if (text) {
          open.text += text
          chunks.push({ _tag: "ReasoningDelta", text })
        }
        // a signature ends the thought it signs: the next one is a new part
        if (signature !== undefined) {
          open.signature = signature
          open = undefined
        }
      } else if (text !== undefined) {
        open = undefined
        if (text !== "") chunks.push({ _tag: "TextDelta", text })
        if (signature !== undefined) textSignature = signature
      }
    }
    const reason = stringAt(candidate, "finishReason")
    if (reason !== undefined) {
      finish = reason
      finishMessage = stringAt(candidate, "finishMessage")
    }
    return { done: false, chunks }
  }
  const end = (): ReadonlyArray<ProviderChunk> | ProviderError => {
    const counted = {
      ...(usage === undefined ? {} : { usage: usageOf(usage) }),
      ...(responseId ? { responseId } : {}),
      ...(modelVersion ? { responseModel: modelVersion } : {})
    }
    if (finish === undefined && blocked !== undefined) return [{ _tag: "Finish", reason: "content_filter", ...counted }]
    if (finish === undefined) return new MalformedResponse({ message: "The stream ended before a finish reason" })
    if (finish === "MALFORMED_FUNCTION_CALL" || finish === "UNEXPECTED_TOOL_CALL") {
      return new MalformedResponse({
        message: `Gemini stopped with ${finish}: the model wrote a function call it could not complete${finishMessage ? ` (${excerpt(finishMessage, 300)})` : ""}`
      })
    }
    const signed = thoughts.flatMap((t) => t.signature === undefined ? [] : [{ text: t.text, thoughtSignature: t.signature }])
    const kept: Kept = {
      ...(signed.length === 0 ? {} : { thoughts: signed }),
      ...(textSignature === undefined ? {} : { textSignature }),
      ...(calls.some((c) => c.given || c.thoughtSignature !== undefined) ? { calls } : {})
    }
    return [
      ...(Object.keys(kept).length === 0 ? [] : [{ _tag: "ProviderBlock", block: { provider, data: { ...kept } } } as const]),
      { _tag: "Finish", reason: finishReason(finish, calls.length), ...counted }
    ]
  }
  return { feed, end }
}
