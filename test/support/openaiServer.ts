/**
 * A scripted OpenAI-compatible Chat Completions server on 127.0.0.1, for driving the real CLI
 * (tests, and the script that records the demo cassette). Each request gets the next reply of
 * the script, or the reply a function computes from the request; a reply can hold its stream
 * open on a gate until the test opens it, and can be an HTTP error instead.
 */
import * as http from "node:http"
import { DEADLINE_MS } from "./waitUntil.ts"

/** A tool call the fake model makes. */
export interface FakeToolCall {
  readonly name: string
  readonly arguments: unknown
  readonly id?: string
}

/** One reply of the fake model. */
export interface Reply {
  /** Reasoning, streamed first as `reasoning_content` deltas (as DeepSeek and vLLM send it). */
  readonly reasoning?: string
  /** Text, streamed as these pieces. */
  readonly text?: string | ReadonlyArray<string>
  readonly toolCalls?: ReadonlyArray<FakeToolCall>
  /**
   * The usage chunk; `null` sends none (as many compatible servers do). `cached` and `reasoning`
   * go into `prompt_tokens_details.cached_tokens` and `completion_tokens_details.reasoning_tokens`.
   */
  readonly usage?: { readonly prompt: number; readonly completion: number; readonly cached?: number; readonly reasoning?: number } | null
  /** The finish reason; default `tool_calls` with tool calls, else `stop`. */
  readonly finish?: string
  /** After the text, the connection is cut: no finish, no usage, no `[DONE]`. */
  readonly cut?: boolean
  /** After the first piece of text, the stream waits for this before going on. */
  readonly hold?: Promise<void>
  /** Nothing at all is sent (not even the headers) until this resolves. */
  readonly before?: Promise<void>
  /** An HTTP error status instead of a stream; `error` is its message, `headers` its headers. */
  readonly status?: number
  readonly error?: string
  readonly headers?: Readonly<Record<string, string>>
}

/** A request as the server received it. */
export interface Received {
  /** The path and query the request was sent to. */
  readonly url: string
  readonly headers: http.IncomingHttpHeaders
  readonly body: any
}

/** The replies: in order (the last repeats), or computed from each request and its index. */
export type Script = ReadonlyArray<Reply> | ((request: Received, index: number) => Reply | Promise<Reply>)

/** A running server. */
export interface OpenAiServer {
  /** The base URL to pass as `--base-url` (ends in `/v1`). */
  readonly url: string
  readonly requests: ReadonlyArray<Received>
  /** Resolves once `n` requests have arrived; rejects at the deadline. */
  readonly received: (n: number, timeoutMs?: number) => Promise<void>
  readonly close: () => Promise<void>
}

/** A gate a reply can wait on: `open()` lets its stream go on. */
export const gate = () => {
  let open!: () => void
  const promise = new Promise<void>((resolve) => {
    open = resolve
  })
  return { promise, open }
}

const chunk = (delta: unknown, finish: string | null = null, usage: unknown = null) =>
  `data: ${
    JSON.stringify({
      id: "chatcmpl-fake",
      object: "chat.completion.chunk",
      created: 1736000000,
      model: "fake",
      choices: usage === null ? [{ index: 0, delta, finish_reason: finish }] : [],
      usage
    })
  }\n\n`

const write = (res: http.ServerResponse, text: string) => new Promise<void>((ok) => res.write(text, () => ok()))

const stream = async (res: http.ServerResponse, reply: Reply, index: number) => {
  res.writeHead(200, { "content-type": "text/event-stream" })
  res.flushHeaders()
  await write(res, chunk({ role: "assistant", content: "" }))
  if (reply.reasoning !== undefined) await write(res, chunk({ reasoning_content: reply.reasoning }))
  const pieces = reply.text === undefined ? [] : typeof reply.text === "string" ? [reply.text] : reply.text
  for (const [i, piece] of pieces.entries()) {
    await write(res, chunk({ content: piece }))
    if (i === 0 && reply.hold) await reply.hold
  }
  if (pieces.length === 0 && reply.hold) await reply.hold
  if (reply.cut) return res.destroy()
  for (const [i, call] of (reply.toolCalls ?? []).entries()) {
    const id = call.id ?? `call_${index}_${i}`
    const args = JSON.stringify(call.arguments)
    await write(res, chunk({ tool_calls: [{ index: i, id, type: "function", function: { name: call.name, arguments: "" } }] }))
    await write(res, chunk({ tool_calls: [{ index: i, function: { arguments: args } }] }))
  }
  await write(res, chunk({}, reply.finish ?? ((reply.toolCalls ?? []).length > 0 ? "tool_calls" : "stop")))
  const usage = reply.usage === undefined ? { prompt: 100 + 10 * index, completion: 20 } : reply.usage
  if (usage !== null) {
    await write(res, chunk({}, null, {
      prompt_tokens: usage.prompt,
      completion_tokens: usage.completion,
      total_tokens: usage.prompt + usage.completion,
      ...(usage.cached === undefined ? {} : { prompt_tokens_details: { cached_tokens: usage.cached } }),
      ...(usage.reasoning === undefined ? {} : { completion_tokens_details: { reasoning_tokens: usage.reasoning } })
    }))
  }
  await write(res, "data: [DONE]\n\n")
  res.end()
}

/** Starts a server answering with `script`. */
export const start = (script: Script): Promise<OpenAiServer> =>
  new Promise((resolve) => {
    const requests: Array<Received> = []
    const waiting = new Set<() => void>()
    const server = http.createServer((req, res) => {
      const parts: Array<Buffer> = []
      req.on("data", (b: Buffer) => parts.push(b))
      req.on("end", async () => {
        const text = Buffer.concat(parts).toString("utf8")
        const received: Received = { url: req.url ?? "", headers: req.headers, body: text === "" ? undefined : JSON.parse(text) }
        const index = requests.length
        requests.push(received)
        waiting.forEach((check) => check())
        const reply = typeof script === "function" ? await script(received, index) : script[Math.min(index, script.length - 1)]!
        if (reply.before) await reply.before
        if (reply.status !== undefined) {
          res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers })
          res.end(JSON.stringify({ error: { message: reply.error ?? "error", type: "invalid_request_error" } }))
          return
        }
        await stream(res, reply, index).catch(() => res.destroy())
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      const received = (n: number, timeoutMs = DEADLINE_MS) =>
        new Promise<void>((ok, fail) => {
          const timer = setTimeout(() => {
            waiting.delete(check)
            fail(new Error(`the server received ${requests.length} of ${n} requests within ${timeoutMs} ms`))
          }, timeoutMs)
          const check = () => {
            if (requests.length < n) return
            clearTimeout(timer)
            waiting.delete(check)
            ok()
          }
          waiting.add(check)
          check()
        })
      resolve({
        url: `http://127.0.0.1:${port}/v1`,
        requests,
        received,
        close: () =>
          new Promise<void>((ok) => {
            server.closeAllConnections()
            server.close(() => ok())
          })
      })
    })
  })
