/**
 * Bedrock's ConverseStream replies as AWS's binary event-stream frames, encoded with AWS's own
 * codec, for loopback servers; and a check of a request's SigV4 signature, recomputed with AWS's
 * signer from what the server received.
 */
import { Sha256 } from "@aws-crypto/sha256-js"
import { EventStreamCodec } from "@smithy/eventstream-codec"
import { SignatureV4 } from "@smithy/signature-v4"
import { createHash } from "node:crypto"
import type * as http from "node:http"
import { createServer } from "node:http"

const codec = new EventStreamCodec((bytes) => new TextDecoder().decode(bytes), (text) => new TextEncoder().encode(text))
const header = (value: string) => ({ type: "string" as const, value })

/** An event frame of `type` carrying `payload`. */
export const frame = (type: string, payload: unknown): Uint8Array =>
  codec.encode({
    headers: { ":message-type": header("event"), ":event-type": header(type), ":content-type": header("application/json") },
    body: new TextEncoder().encode(JSON.stringify(payload))
  })

/** An exception frame, as Bedrock sends a failure after the stream has started. */
export const exceptionFrame = (type: string, message: string): Uint8Array =>
  codec.encode({
    headers: { ":message-type": header("exception"), ":exception-type": header(type), ":content-type": header("application/json") },
    body: new TextEncoder().encode(JSON.stringify({ message }))
  })

/** Joins frames into one body. */
export const concat = (parts: ReadonlyArray<Uint8Array>): Uint8Array => Buffer.concat(parts.map((part) => Buffer.from(part)))

const usage = (input: number, output: number, cacheRead = 0, cacheWrite = 0) =>
  frame("metadata", {
    usage: { inputTokens: input, outputTokens: output, totalTokens: input + output + cacheRead + cacheWrite, cacheReadInputTokens: cacheRead, cacheWriteInputTokens: cacheWrite },
    metrics: { latencyMs: 120 }
  })

/** A text answer, in pieces, with usage. */
export const textReply = (pieces: ReadonlyArray<string>, input = 20, output = 5, cacheRead = 0, cacheWrite = 0): ReadonlyArray<Uint8Array> => [
  frame("messageStart", { role: "assistant" }),
  ...pieces.map((text) => frame("contentBlockDelta", { contentBlockIndex: 0, delta: { text } })),
  frame("contentBlockStop", { contentBlockIndex: 0 }),
  frame("messageStop", { stopReason: "end_turn" }),
  usage(input, output, cacheRead, cacheWrite)
]

/** A reply that thinks (signed), says a word and calls tools, their arguments in two pieces each. */
export const toolReply = (
  calls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly input: unknown }>,
  options: { readonly thinking?: { readonly text: string; readonly signature: string }; readonly input?: number; readonly output?: number } = {}
): ReadonlyArray<Uint8Array> => {
  const thinking = options.thinking
  const first = thinking === undefined ? 0 : 1
  return [
    frame("messageStart", { role: "assistant" }),
    ...(thinking === undefined ? [] : [
      frame("contentBlockDelta", { contentBlockIndex: 0, delta: { reasoningContent: { text: thinking.text.slice(0, 5) } } }),
      frame("contentBlockDelta", { contentBlockIndex: 0, delta: { reasoningContent: { text: thinking.text.slice(5) } } }),
      frame("contentBlockDelta", { contentBlockIndex: 0, delta: { reasoningContent: { signature: thinking.signature } } }),
      frame("contentBlockStop", { contentBlockIndex: 0 })
    ]),
    ...calls.flatMap((call, i) => {
      const json = JSON.stringify(call.input)
      const index = first + i
      return [
        frame("contentBlockStart", { contentBlockIndex: index, start: { toolUse: { toolUseId: call.id, name: call.name } } }),
        frame("contentBlockDelta", { contentBlockIndex: index, delta: { toolUse: { input: json.slice(0, 3) } } }),
        frame("contentBlockDelta", { contentBlockIndex: index, delta: { toolUse: { input: json.slice(3) } } }),
        frame("contentBlockStop", { contentBlockIndex: index })
      ]
    }),
    frame("messageStop", { stopReason: "tool_use" }),
    usage(options.input ?? 30, options.output ?? 12)
  ]
}

/**
 * Whether a request the server received carries a valid SigV4 signature for `credentials`: AWS's
 * signer recomputes it from the method, the path, the signed headers and the body as received.
 */
export const signatureValid = async (
  request: { readonly method: string; readonly path: string; readonly headers: http.IncomingHttpHeaders; readonly body: string },
  credentials: { readonly accessKeyId: string; readonly secretAccessKey: string; readonly sessionToken?: string },
  region: string
): Promise<boolean> => {
  const authorization = String(request.headers["authorization"] ?? "")
  const signedHeaders = /SignedHeaders=([^,]+)/.exec(authorization)?.[1]?.split(";") ?? []
  const amzDate = String(request.headers["x-amz-date"] ?? "")
  const signingDate = new Date(`${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`)
  const headers: Record<string, string> = {}
  for (const name of signedHeaders) headers[name] = String(request.headers[name] ?? "")
  const [hostname, port] = (headers["host"] ?? "").split(":")
  const signer = new SignatureV4({ service: "bedrock", region, credentials, sha256: Sha256 })
  const resigned = await signer.sign({
    method: request.method,
    protocol: "http:",
    hostname: hostname!,
    ...(port === undefined ? {} : { port: Number(port) }),
    path: request.path,
    query: {},
    headers,
    body: request.body
  }, { signingDate })
  // the signature covers the body through its hash: the one signed must be that of the body received
  const bodyHash = createHash("sha256").update(request.body).digest("hex")
  const hashed = request.headers["x-amz-content-sha256"] === undefined || request.headers["x-amz-content-sha256"] === bodyHash
  return signedHeaders.length > 0 && hashed && resigned.headers["authorization"] === authorization
}

/** A request as the Bedrock server received it. */
export interface BedrockReceived {
  readonly method: string
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
  readonly json: any
}

/** One reply: frames of a 200 event stream, or an HTTP error of AWS's shape. */
export type BedrockReply =
  | { readonly frames: ReadonlyArray<Uint8Array> }
  | { readonly status: number; readonly type: string; readonly message: string }

/** A loopback server answering ConverseStream requests with what `script` computes; it stops with `close`. */
export const startBedrock = (script: (request: BedrockReceived, index: number) => BedrockReply | Promise<BedrockReply>) =>
  new Promise<{ readonly url: string; readonly requests: ReadonlyArray<BedrockReceived>; readonly close: () => Promise<void> }>((resolve) => {
    const requests: Array<BedrockReceived> = []
    const server = createServer((req, res) => {
      const parts: Array<Buffer> = []
      req.on("data", (b: Buffer) => parts.push(b))
      req.on("end", async () => {
        const body = Buffer.concat(parts).toString("utf8")
        const received = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body, json: JSON.parse(body) }
        const index = requests.length
        requests.push(received)
        const reply = await script(received, index)
        if ("status" in reply) {
          res.writeHead(reply.status, { "content-type": "application/json", "x-amzn-errortype": `${reply.type}:http://internal.amazon.com/coral/com.amazon.bedrock/` })
          res.end(JSON.stringify({ message: reply.message }))
          return
        }
        res.writeHead(200, { "content-type": "application/vnd.amazon.eventstream" })
        for (const piece of reply.frames) res.write(piece)
        res.end()
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      resolve({
        url: `http://127.0.0.1:${port}`,
        requests,
        close: () => new Promise<void>((ok) => {
          server.closeAllConnections()
          server.close(() => ok())
        })
      })
    })
  })
