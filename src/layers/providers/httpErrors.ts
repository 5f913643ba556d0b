/**
 * The mapping from what an HTTP model API says when it fails to the library's provider errors,
 * shared by the wire-format layers so that every vendor is retried (or not) the same way, whether
 * the failure came as an HTTP status or as an error event inside a 200 stream. It imports nothing
 * of the HTTP client, so the request checks of the wire formats load without it.
 */
import {
  ContextLengthExceeded,
  MalformedResponse,
  type ProviderError,
  ProviderRejected,
  ProviderUnavailable,
  RateLimited,
  ResponseTooLarge
} from "../../domain/errors.ts"

/** The longest server message kept in an error; error bodies can be whole HTML pages. */
const maxMessageLength = 500

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

/**
 * What a server said about a failure: its words, and whatever machine-readable kind it gave —
 * `code` and `type` strings (`invalid_api_key`, `rate_limit_error`, …) and a numeric `status`
 * (OpenRouter and some gateways put the HTTP status of the upstream failure in `code`).
 */
export interface ErrorBody {
  readonly message: string
  readonly code?: string
  readonly type?: string
  readonly status?: number
  /** How long the server asks to wait, from Google's `RetryInfo` detail (`"retryDelay": "37s"`). */
  readonly retryAfterMs?: number
}

/** The error of a response body, in the shapes OpenAI, Anthropic, vLLM, Ollama and OpenRouter use. */
export const describeBody = (body: string): ErrorBody => {
  try {
    return describeJson(JSON.parse(body), body.trim())
  } catch {
    return { message: body.trim() }
  }
}

/** The error of an already parsed value; `fallback` is the message when it carries none. */
export const describeJson = (json: unknown, fallback: string): ErrorBody => {
  const record = (u: unknown): Record<string, unknown> | undefined =>
    typeof u === "object" && u !== null ? u as Record<string, unknown> : undefined
  const text = (u: unknown) => typeof u === "string" ? u : undefined
  const int = (u: unknown) => typeof u === "number" && Number.isInteger(u) ? u : undefined
  // Vertex AI's streaming endpoints wrap their error in an array: `[{"error": {…}}]`
  const root = record(Array.isArray(json) && json.length === 1 ? json[0] : json)
  const inner = record(root?.["error"])
  const message = text(inner?.["message"]) ?? text(root?.["error"]) ?? text(root?.["message"]) ?? text(root?.["detail"]) ??
    fallback
  const code = text(inner?.["code"]) ?? text(root?.["code"])
  // Google puts its kind (`RESOURCE_EXHAUSTED`, `UNAUTHENTICATED`, …) in `status`, beside a numeric `code`
  const type = text(inner?.["type"]) ?? text(inner?.["status"]) ?? (inner === undefined ? text(root?.["type"]) : undefined)
  const status = int(inner?.["code"]) ?? int(inner?.["status"]) ?? int(root?.["code"]) ?? int(root?.["status"])
  const retryAfter = retryInfoMs(inner?.["details"])
  return {
    message,
    ...(code === undefined ? {} : { code }),
    ...(type === undefined ? {} : { type }),
    ...(status === undefined ? {} : { status }),
    ...(retryAfter === undefined ? {} : { retryAfterMs: retryAfter })
  }
}

/** The delay of a `google.rpc.RetryInfo` among an error's `details`, in milliseconds (`"retryDelay": "37.5s"`). */
const retryInfoMs = (details: unknown): number | undefined => {
  if (!Array.isArray(details)) return undefined
  for (const detail of details) {
    if (typeof detail !== "object" || detail === null) continue
    const record = detail as Record<string, unknown>
    const delay = record["retryDelay"]
    if (!String(record["@type"] ?? "").endsWith("google.rpc.RetryInfo") || typeof delay !== "string") continue
    const seconds = /^(\d+(?:\.\d+)?)s$/.exec(delay.trim())
    if (seconds) return Math.round(Number(seconds[1]) * 1000)
  }
  return undefined
}

const contextLengthPattern =
  /context[_ ]length|maximum context|prompt is too long|context window|too many tokens|exceeds the maximum number of tokens/i

/** Whether an error's words say the prompt did not fit the model. */
export const isContextLength = (message: string, code?: string): boolean =>
  code === "context_length_exceeded" || contextLengthPattern.test(message)

/** Kinds that say the request itself was refused: retrying the same request cannot help. */
const rejectedKinds =
  /invalid_api_key|authentication|unauthori[sz]ed|unauthenticated|permission|forbidden|invalid_request|invalid_argument|failed_precondition|not_found|insufficient_quota|billing/i
const rateLimitKinds = /rate_limit|too_many_requests|resource_exhausted/i
/** Anthropic's 413: the request is over its byte limit, which dropping history fixes. */
const tooLargeKinds = /request_too_large/i

const kindsOf = (body: ErrorBody): string => [body.code, body.type].filter((k) => k !== undefined).join(" ")

/**
 * The provider error for a failure, by what the server said and (for a failed response) the HTTP
 * status. A context overflow is recognised by its words or code; a 413 counts as one only then
 * (a proxy's "Request Entity Too Large" page does not say the prompt was too long, and compressing
 * on it would throw history away for nothing).
 */
const classify = (body: ErrorBody, status: number | undefined, retryAfter: number | undefined): ProviderError => {
  const message = body.message
  const kinds = kindsOf(body)
  if (isContextLength(message, body.code) || (status === 413 && tooLargeKinds.test(kinds))) {
    return new ContextLengthExceeded({ message })
  }
  const withStatus = status === undefined ? { message } : { message, status }
  if (/insufficient_quota|billing/i.test(kinds)) return new ProviderRejected(withStatus)
  if (status === 429 || (status === undefined && rateLimitKinds.test(kinds))) {
    return new RateLimited(retryAfter === undefined ? { message } : { message, retryAfterMs: retryAfter })
  }
  if (status === undefined && rejectedKinds.test(kinds)) return new ProviderRejected({ message })
  if (status === undefined || status >= 500 || status === 408) return new ProviderUnavailable(withStatus)
  return new ProviderRejected(withStatus)
}

/** The provider error for a non-success HTTP response; its message still needs `scrubError`. */
export const fromResponse = (options: {
  readonly status: number
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly body: string
  readonly nowMs: number
}): ProviderError => {
  const body = describeBody(options.body)
  const message = body.message === "" ? `HTTP ${options.status}` : body.message
  return classify({ ...body, message }, options.status, retryAfterMs(options.headers, options.nowMs) ?? body.retryAfterMs)
}

/**
 * The provider error for an error reported inside a stream (after a 200), classified like an HTTP
 * failure: by its `code`/`type` (an invalid key is rejected, a rate limit waited on), else by the
 * status it names, else as a server-side failure, which is retried.
 */
export const fromStreamError = (body: ErrorBody): ProviderError =>
  classify(body, body.status !== undefined && body.status >= 400 && body.status < 600 ? body.status : undefined, body.retryAfterMs)

/**
 * The same error with every known secret removed from its message (`scrub`, the `Secrets`
 * registry's), then the message bounded — in that order, so no cut can leave part of a key
 * behind. Servers and proxies sometimes echo request headers back in error bodies. The last step
 * of every HTTP provider stream.
 */
export const scrubError = (error: ProviderError, scrub: (text: string) => string): ProviderError => {
  const scrubbed = scrub(error.message)
  const message = scrubbed.length > maxMessageLength ? `${scrubbed.slice(0, maxMessageLength)}…` : scrubbed
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
    case "ResponseTooLarge":
      return new ResponseTooLarge({ message, limitBytes: error.limitBytes })
  }
}
