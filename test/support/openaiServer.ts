/**
 * A scripted OpenAI-compatible Chat Completions server on 127.0.0.1, for driving the real CLI
 * (tests, and the script that records the demo cassette). Each request gets the next reply of
 * the script, or the reply a function computes from the request; a reply can hold its stream
 * open on a gate until the test opens it, and can be an HTTP error instead.
 */
import * as http from "node:http"

/** A tool call the fake model makes. */
export interface FakeToolCall {
  readonly name: string
  readonly arguments: unknown
  readonly id?: string
}

/** One reply of the fake model. */
export interface Reply {
  /** Text, streamed as these pieces. */
  readonly text?: string | ReadonlyArray<string>
  readonly toolCalls?: ReadonlyArray<FakeToolCall>
  readonly usage?: { readonly prompt: number; readonly completion: number }
  /** After the first piece of text, the stream waits for this before going on. */
  readonly hold?: Promise<void>
  /** An HTTP error status instead of a stream; `error` is its message. */
  readonly status?: number
  readonly error?: string
}

/** A request as the server received it. */
export interface Received {
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
  const pieces = reply.text === undefined ? [] : typeof reply.text === "string" ? [reply.text] : reply.text
  for (const [i, piece] of pieces.entries()) {
    await write(res, chunk({ content: piece }))
    if (i === 0 && reply.hold) await reply.hold
  }
  if (pieces.length === 0 && reply.hold) await reply.hold
  for (const [i, call] of (reply.toolCalls ?? []).entries()) {
    const id = call.id ?? `call_${index}_${i}`
    const args = JSON.stringify(call.arguments)
    await write(res, chunk({ tool_calls: [{ index: i, id, type: "function", function: { name: call.name, arguments: "" } }] }))
    await write(res, chunk({ tool_calls: [{ index: i, function: { arguments: args } }] }))
  }
  await write(res, chunk({}, (reply.toolCalls ?? []).length > 0 ? "tool_calls" : "stop"))
  const usage = reply.usage ?? { prompt: 100 + 10 * index, completion: 20 }
  await write(res, chunk({}, null, { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion }))
  await write(res, "data: [DONE]\n\n")
  res.end()
}

/** Starts a server answering with `script`. */
export const start = (script: Script): Promise<OpenAiServer> =>
  new Promise((resolve) => {
    const requests: Array<Received> = []
    const server = http.createServer((req, res) => {
      const parts: Array<Buffer> = []
      req.on("data", (b: Buffer) => parts.push(b))
      req.on("end", async () => {
        const text = Buffer.concat(parts).toString("utf8")
        const received: Received = { headers: req.headers, body: text === "" ? undefined : JSON.parse(text) }
        const index = requests.length
        requests.push(received)
        const reply = typeof script === "function" ? await script(received, index) : script[Math.min(index, script.length - 1)]!
        if (reply.status !== undefined) {
          res.writeHead(reply.status, { "content-type": "application/json" })
          res.end(JSON.stringify({ error: { message: reply.error ?? "error", type: "invalid_request_error" } }))
          return
        }
        await stream(res, reply, index).catch(() => res.destroy())
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      resolve({
        url: `http://127.0.0.1:${port}/v1`,
        requests,
        close: () =>
          new Promise<void>((ok) => {
            server.closeAllConnections()
            server.close(() => ok())
          })
      })
    })
  })
