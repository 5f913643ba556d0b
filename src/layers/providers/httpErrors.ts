/**
 * The mapping from what an HTTP model API says when it fails to the library's provider errors,
 * shared by the wire-format layers so that every vendor is retried (or not) the same way.
 */
import { Redacted } from "effect"
import {
  ContextLengthExceeded,
  MalformedResponse,
  type ProviderError,
  ProviderRejected,
  ProviderUnavailable,
  RateLimited
} from "../../domain/errors.ts"

/** The longest server message kept in an error; error bodies can be whole HTML pages. */
const maxMessageLength = 500

/**
 * Removes every secret from a text, then bounds its length (in that order, so no cut can leave
 * part of a key behind). Servers and proxies sometimes echo request headers back in error
 * bodies, so nothing produced from a server's words may carry the API key.
 */
const scrub = (text: string, secrets: ReadonlyArray<Redacted.Redacted<string>>): string => {
  let out = text
  for (const secret of secrets) {
    const value = Redacted.value(secret)
    if (value.length > 0) out = out.split(value).join("<redacted>")
  }
  return out.length > maxMessageLength ? `${out.slice(0, maxMessageLength)}…` : out
}

/**
 * How long a server asks us to wait, in milliseconds: `retry-after-ms` (OpenAI), else
 * `Retry-After` as seconds or as an HTTP date relative to `nowMs` (the Clock's time).
 */
export const retryAfterMs = (headers: Readonly<Record<string, string | undefined>>, nowMs: number): number | undefined => {
  const ms = headers["retry-after-ms"]
  if (ms !== undefined && ms.trim() !== "" && Number.isFinite(Number(ms))) return Math.max(0, Number(ms))
  const value = headers["retry-after"]?.trim()
  if (value === undefined || value === "") return undefined
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs)
}

/** The message and code of an error body, in the shapes OpenAI, Anthropic, vLLM and Ollama use. */
export const describeBody = (body: string): { readonly message: string; readonly code?: string } => {
  try {
    return describeJson(JSON.parse(body), body.trim())
  } catch {
    return { message: body.trim() }
  }
}

/** The message and code of an already parsed error value; `fallback` when it carries no message. */
export const describeJson = (json: unknown, fallback: string): { readonly message: string; readonly code?: string } => {
  const record = (u: unknown): Record<string, unknown> | undefined =>
    typeof u === "object" && u !== null ? u as Record<string, unknown> : undefined
  const root = record(json)
  const inner = record(root?.["error"])
  const text = (u: unknown) => typeof u === "string" ? u : undefined
  const message = text(inner?.["message"]) ?? text(root?.["error"]) ?? text(root?.["message"]) ?? text(root?.["detail"]) ??
    fallback
  const code = text(inner?.["code"]) ?? text(inner?.["type"]) ?? text(root?.["code"]) ?? text(root?.["type"])
  return code === undefined ? { message } : { message, code }
}

const contextLengthPattern = /context[_ ]length|maximum context|prompt is too long|context window|too many tokens/i

/** Whether an error's words say the prompt did not fit the model. */
export const isContextLength = (message: string, code?: string): boolean =>
  code === "context_length_exceeded" || contextLengthPattern.test(message)

/** The provider error for a non-success HTTP response; its message still needs `scrubError`. */
export const fromResponse = (options: {
  readonly status: number
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly body: string
  readonly nowMs: number
}): ProviderError => {
  const { code, message: raw } = describeBody(options.body)
  const status = options.status
  const message = raw === "" ? `HTTP ${status}` : raw
  if (status === 413 || (status === 400 && isContextLength(raw, code))) return new ContextLengthExceeded({ message })
  if (status === 429 && code !== "insufficient_quota") {
    const wait = retryAfterMs(options.headers, options.nowMs)
    return new RateLimited(wait === undefined ? { message } : { message, retryAfterMs: wait })
  }
  if (status >= 500 || status === 408) return new ProviderUnavailable({ message, status })
  return new ProviderRejected({ message, status })
}

/**
 * The provider error for an error reported inside a stream (after a 200): its words decide
 * whether it is the context length, a rate limit or a rejection; otherwise it is treated as a
 * server-side failure.
 */
export const fromStreamError = (body: { readonly message: string; readonly code?: string }): ProviderError => {
  const message = body.message
  if (isContextLength(body.message, body.code)) return new ContextLengthExceeded({ message })
  if (body.code === "rate_limit_error" || body.code === "rate_limit_exceeded") return new RateLimited({ message })
  if (body.code === "invalid_request_error" || body.code === "authentication_error" || body.code === "permission_error") {
    return new ProviderRejected({ message })
  }
  return new ProviderUnavailable({ message })
}

/** A transport failure (refused, reset, dropped mid-stream): the network, so retryable. */
export const fromTransport = (what: string, cause: unknown) => new ProviderUnavailable({ message: `${what}: ${causeText(cause)}` })

const causeText = (cause: unknown): string =>
  cause instanceof Error ? cause.message : typeof cause === "string" ? cause : "unknown error"

/**
 * The same error with every secret removed from its message and the message bounded: the last
 * step of every HTTP provider stream, and the only place secrets are scrubbed.
 */
export const scrubError = (error: ProviderError, secrets: ReadonlyArray<Redacted.Redacted<string>>): ProviderError => {
  const message = scrub(error.message, secrets)
  if (message === error.message) return error
  switch (error._tag) {
    case "ContextLengthExceeded":
      return new ContextLengthExceeded({ message })
    case "RateLimited":
      return new RateLimited(error.retryAfterMs === undefined ? { message } : { message, retryAfterMs: error.retryAfterMs })
    case "ProviderUnavailable":
      return new ProviderUnavailable(error.status === undefined ? { message } : { message, status: error.status })
    case "ProviderRejected":
      return new ProviderRejected(error.status === undefined ? { message } : { message, status: error.status })
    case "MalformedResponse":
      return new MalformedResponse({ message })
  }
}
