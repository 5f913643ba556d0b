/**
 * `web_fetch`: an HTTP(S) GET of a URL, the page as Markdown. Not among the default tools: it is
 * built only when named (`builtinTools({ enable: [..., "web_fetch"] })`), and every call needs the
 * user's approval (the CLI's rule `web_fetch(domain:example.com)` gives it for a domain).
 *
 * What it will not do: connect to an address that is not public (loopback, private, link-local,
 * cloud metadata; see `netAddress.ts`) unless `allowPrivate(host)` says so. The host's name is
 * resolved once, every address it has is checked, and the connection is made to the checked
 * address (the request's `lookup` answers with it), so a name that resolves differently a moment
 * later (DNS rebinding) changes nothing. Each redirect is checked the same way, within
 * `maxRedirects`, and followed only on the same host: approval (or a `domain:` rule) was given for
 * that host, so a redirect elsewhere is reported to the model, which may ask for that URL itself. It sends no cookies, no credentials and none of the user's keys: only a
 * `User-Agent` and an `Accept`; a URL with a user name or password is refused. The body is read up
 * to `maxBytes` (the rest is cut, with a note); the whole call has a deadline on the `Clock`.
 *
 * HTML becomes Markdown through `turndown` (loaded with `import()` on the first HTML page only);
 * other text (plain text, Markdown, JSON, XML) is returned as it is; anything else is refused.
 *
 * @example
 * ```ts
 * import { builtinTools, ToolRegistryLive } from "effect-agent-loop"
 * const tools = ToolRegistryLive.layer(builtinTools({ enable: ["read_file", "web_fetch"], webFetch: { maxBytes: 1024 * 1024 } }))
 * ```
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as dns from "node:dns"
import type * as http from "node:http"
import type { LookupFunction } from "node:net"
import { ToolError } from "../domain/errors.ts"
import * as Tool from "../domain/Tool.ts"
import { isPublicAddress } from "./netAddress.ts"

/** Limits and policy of `web_fetch`. */
export interface WebFetchOptions {
  /** The most bytes of a body read; the rest is cut. Default 2 MiB. */
  readonly maxBytes?: number
  /** The most characters of Markdown returned; the rest is cut. Default 100,000. */
  readonly maxChars?: number
  /** How long the whole call (redirects included) may take. Default 30 s. */
  readonly timeout?: Duration.Input
  /** How many redirects are followed. Default 5. */
  readonly maxRedirects?: number
  /**
   * Whether `host` may be reached at an address that is not public (a rule naming it, say). Asked on
   * every fetch and every redirect, with the addresses just resolved. Default: never.
   */
  readonly allowPrivate?: (host: string) => boolean
}

/** The defaults of `web_fetch`. */
export const WEB_FETCH_DEFAULTS = { maxBytes: 2 * 1024 * 1024, maxChars: 100_000, timeout: Duration.seconds(30), maxRedirects: 5 } as const

/** The arguments of `web_fetch`. */
export const WebFetchParameters = Schema.Struct({
  url: Schema.String.annotate({ description: "The http:// or https:// URL to fetch" })
})

const USER_AGENT = "agent-loop web_fetch"
const REDIRECTS = new Set([301, 302, 303, 307, 308])
const TEXT_TYPES = /^(text\/|application\/(json|xml|xhtml\+xml|[\w.+-]+\+(json|xml)|javascript)\b)/

const fail = (message: string) => Effect.fail(new ToolError({ message }))

/** A URL the tool may request, or why not. */
const checkUrl = (text: string): URL | string => {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return `"${text}" is not a URL`
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return `only http:// and https:// URLs are fetched, not ${url.protocol}`
  if (url.username !== "" || url.password !== "") return "URLs with a user name or password are refused; credentials are never sent"
  return url
}

const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, "$1")

/** Resolves `url`'s host and checks every address; the first one, to connect to. */
const resolveChecked = (url: URL, allowPrivate: (host: string) => boolean) =>
  Effect.gen(function*() {
    const host = hostOf(url)
    const addresses = yield* Effect.tryPromise({
      try: () => dns.promises.lookup(host, { all: true, verbatim: true }),
      catch: (e) => new ToolError({ message: `cannot resolve ${host}: ${(e as NodeJS.ErrnoException).code ?? String(e)}` })
    })
    if (addresses.length === 0) return yield* fail(`${host} has no address`)
    const notPublic = addresses.find((a) => !isPublicAddress(a.address))
    if (notPublic !== undefined && !allowPrivate(host)) {
      return yield* fail(
        `${url.origin} resolves to ${notPublic.address}, which is not a public address (loopback, private, link-local or ` +
          `reserved); refused. An allow rule naming this host itself, web_fetch(domain:${host}), in the settings or --allow, lets it through`
      )
    }
    return addresses[0]!
  })

interface Fetched {
  readonly status: number
  readonly location: string | undefined
  readonly contentType: string
  readonly body: Buffer
  readonly cut: boolean
}

/** The HTTP client of `url`'s scheme, loaded when first used (TLS costs start-up time otherwise). */
type Client = { readonly request: (url: URL, options: http.RequestOptions) => http.ClientRequest }
const clientOf = (url: URL): Effect.Effect<Client> =>
  Effect.promise(() => url.protocol === "https:" ? import("node:https") : import("node:http"))

/** One GET of `url`, connected to `address` whatever the name resolves to now. */
const getOnce = (client: Client, url: URL, address: dns.LookupAddress, maxBytes: number) =>
  Effect.callback<Fetched, ToolError>((resume, signal) => {
    const pinned: LookupFunction = (_host, options, callback) =>
      options.all ? callback(null, [address]) : callback(null, address.address, address.family)
    const request = client.request(url, {
      method: "GET",
      agent: false,
      lookup: pinned,
      signal,
      headers: { "user-agent": USER_AGENT, accept: "text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.5", "accept-encoding": "identity" }
    })
    request.on("error", (error) => {
      if (!signal.aborted) resume(fail(`cannot fetch ${url.href}: ${error.message}`))
    })
    request.on("response", (response) => {
      const status = response.statusCode ?? 0
      const contentType = String(response.headers["content-type"] ?? "")
      const location = response.headers.location
      if (REDIRECTS.has(status)) {
        response.destroy()
        return resume(Effect.succeed({ status, location, contentType, body: Buffer.alloc(0), cut: false }))
      }
      const chunks: Array<Buffer> = []
      let size = 0
      const finish = (cut: boolean) => resume(Effect.succeed({ status, location, contentType, body: Buffer.concat(chunks), cut }))
      response.on("data", (chunk: Buffer) => {
        const room = maxBytes - size
        chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk)
        size += Math.min(chunk.length, room)
        if (chunk.length >= room && (chunk.length > room || response.readableLength > 0)) {
          response.destroy()
          finish(true)
        }
      })
      response.on("end", () => finish(false))
      response.on("error", (error) => {
        if (!signal.aborted) resume(fail(`cannot read ${url.href}: ${error.message}`))
      })
    })
    request.end()
  })

const charsetOf = (contentType: string) => /charset=["']?([\w-]+)/i.exec(contentType)?.[1] ?? "utf-8"

const decode = (body: Buffer, contentType: string) => {
  try {
    return new TextDecoder(charsetOf(contentType)).decode(body)
  } catch {
    return new TextDecoder("utf-8").decode(body)
  }
}

/** HTML as Markdown, by `turndown` (a DOM from its own parser), without the head, scripts and styles. */
const toMarkdown = (html: string) =>
  Effect.promise(() => import("turndown")).pipe(
    Effect.map(({ default: TurndownService }) => {
      const service = new TurndownService({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-" })
      service.remove(["head", "title", "script", "style", "noscript", "iframe", "template"])
      return service.turndown(html)
    })
  )

/** `web_fetch` with the given limits and policy; it needs approval for every call. */
export const makeWebFetch = (options: WebFetchOptions = {}) => {
  const maxBytes = options.maxBytes ?? WEB_FETCH_DEFAULTS.maxBytes
  const maxChars = options.maxChars ?? WEB_FETCH_DEFAULTS.maxChars
  const maxRedirects = options.maxRedirects ?? WEB_FETCH_DEFAULTS.maxRedirects
  const timeout = Duration.fromInputUnsafe(options.timeout ?? WEB_FETCH_DEFAULTS.timeout)
  const allowPrivate = options.allowPrivate ?? (() => false)
  return Tool.make({
    name: "web_fetch",
    description: "Fetches a web page or text file by HTTP(S) GET and returns it as Markdown (HTML converted; plain text, " +
      "Markdown and JSON as they are). Sends no cookies or credentials. Use it to read documentation or a page the user names.",
    parameters: WebFetchParameters,
    requiresApproval: true,
    // the call's own deadline below says what happened; this one only backs it up
    timeout: Duration.sum(timeout, Duration.seconds(5)),
    execute: ({ url: input }) =>
      Effect.gen(function*() {
        let url = checkUrl(input)
        for (let redirects = 0;; redirects++) {
          if (typeof url === "string") return yield* fail(url)
          const address = yield* resolveChecked(url, allowPrivate)
          const fetched = yield* getOnce(yield* clientOf(url), url, address, maxBytes)
          if (REDIRECTS.has(fetched.status)) {
            if (fetched.location === undefined) return yield* fail(`${url.href} answered ${fetched.status} without a Location`)
            if (redirects >= maxRedirects) return yield* fail(`${input} redirects more than ${maxRedirects} times; stopped at ${url.href}`)
            const next = checkUrl(new URL(fetched.location, url).href)
            if (typeof next !== "string" && next.hostname !== url.hostname) {
              // what was approved (or allowed by a domain rule) is this host: another one is a call of its own
              yield* resolveChecked(next, allowPrivate)
              return `${url.href} redirects to ${next.href}, on another host; it was not followed. ` +
                `To read it, call web_fetch with that URL (it is approved on its own).`
            }
            url = next
            continue
          }
          if (fetched.status < 200 || fetched.status >= 300) return yield* fail(`${url.href} answered HTTP ${fetched.status}`)
          const type = fetched.contentType.split(";")[0]!.trim().toLowerCase()
          if (type !== "" && !TEXT_TYPES.test(type)) return yield* fail(`${url.href} is ${type}, not text or HTML; web_fetch reads text only`)
          const text = decode(fetched.body, fetched.contentType)
          const markdown = type === "text/html" || type === "application/xhtml+xml" || (type === "" && /^\s*</.test(text))
            ? yield* toMarkdown(text)
            : text
          const shown = markdown.length > maxChars ? markdown.slice(0, maxChars) : markdown
          const notes = [
            ...(fetched.cut ? [`the body was cut at ${maxBytes} bytes`] : []),
            ...(markdown.length > maxChars ? [`the text was cut at ${maxChars} characters of ${markdown.length}`] : [])
          ]
          return `${url.href}${url.href === input ? "" : ` (from ${input})`}\n\n${shown}${notes.length === 0 ? "" : `\n\n[${notes.join("; ")}]`}`
        }
      }).pipe(
        Effect.timeoutOrElse({ duration: timeout, orElse: () => fail(`${input} did not answer within ${Duration.format(timeout)}`) })
      )
  })
}

/** `web_fetch` with default limits and no private addresses. */
export const webFetch = makeWebFetch()
