/**
 * A small MCP server over stdio (line-delimited JSON-RPC 2.0) for tests, run with `process.execPath`.
 *
 * Tools: `lookup` (read-only; `barrier: n` holds the reply until n lookups have started, so
 * overlapping calls can be proven without timing), `put` (mutating; a key starting with "!" gives
 * an `isError` result, key "__exit__" kills the server mid-call, a non-string key is a JSON-RPC
 * error). Every event is appended synchronously to the file named by `MCP_TEST_LOG`, one per line:
 * `ready <pid>`, `start <tool> <key>`, `end <tool> <key>`.
 *
 * `MCP_TEST_IGNORE_EOF=1` keeps the process alive after stdin closes (a server that must be killed).
 */
import { appendFileSync } from "node:fs"

const logFile = process.env.MCP_TEST_LOG
const log = (line) => {
  if (logFile) appendFileSync(logFile, line + "\n")
}

const tools = [
  {
    name: "lookup",
    description: "Reads a value by key",
    inputSchema: {
      type: "object",
      properties: { key: { type: "string" }, barrier: { type: "integer" } },
      required: ["key"]
    },
    annotations: { readOnlyHint: true }
  },
  {
    name: "put",
    description: "Stores a value under a key",
    inputSchema: {
      type: "object",
      properties: { key: { type: "string" }, value: { type: "string" } },
      required: ["key", "value"]
    },
    annotations: { readOnlyHint: false, destructiveHint: false }
  }
]

const store = new Map([["a", "alpha"], ["b", "beta"]])
let lookupsStarted = 0
const waiters = []

const send = (message) => process.stdout.write(JSON.stringify(message) + "\n")
const text = (value) => ({ content: [{ type: "text", text: value }] })

/** Resolves once `n` lookups have started, or after 5 seconds of real time with `false`. */
const barrier = (n) =>
  new Promise((resolve) => {
    if (lookupsStarted >= n) return resolve(true)
    const timer = setTimeout(() => resolve(false), 5000)
    waiters.push({ n, release: () => (clearTimeout(timer), resolve(true)) })
  })

const lookup = async ({ key, barrier: n }) => {
  lookupsStarted++
  for (const waiter of waiters.splice(0)) {
    if (lookupsStarted >= waiter.n) waiter.release()
    else waiters.push(waiter)
  }
  if (typeof n === "number" && !(await barrier(n))) return { ...text("barrier timed out"), isError: true }
  if (key === "picture") {
    return {
      content: [
        { type: "text", text: "a picture:" },
        { type: "image", data: Buffer.from("not really a png").toString("base64"), mimeType: "image/png" }
      ]
    }
  }
  if (key.startsWith("env:")) return text(process.env[key.slice(4)] ?? "(unset)")
  return text(store.has(key) ? `${key}=${store.get(key)}` : `${key} not found`)
}

const put = ({ key, value }) => {
  if (key === "__exit__") process.exit(3)
  if (key.startsWith("!")) return { ...text(`key ${key} is reserved`), isError: true }
  store.set(key, value)
  return text(`stored ${key}`)
}

const call = async (id, params) => {
  const args = params.arguments ?? {}
  if (typeof args.key !== "string") {
    return send({ jsonrpc: "2.0", id, error: { code: -32602, message: "key must be a string" } })
  }
  log(`start ${params.name} ${args.key}`)
  const result = params.name === "lookup" ? await lookup(args) : put(args)
  log(`end ${params.name} ${args.key}`)
  send({ jsonrpc: "2.0", id, result })
}

const handle = (message) => {
  const { id, method, params } = message
  if (id === undefined) return
  switch (method) {
    case "initialize":
      return send({
        jsonrpc: "2.0",
        id,
        result: {
          protocolVersion: params.protocolVersion,
          capabilities: { tools: {} },
          serverInfo: { name: "test-server", version: "1.0.0" }
        }
      })
    case "ping":
      return send({ jsonrpc: "2.0", id, result: {} })
    case "tools/list":
      return send({ jsonrpc: "2.0", id, result: { tools } })
    case "tools/call":
      if (!tools.some((t) => t.name === params.name)) {
        return send({ jsonrpc: "2.0", id, error: { code: -32602, message: `unknown tool ${params.name}` } })
      }
      return void call(id, params)
    default:
      return send({ jsonrpc: "2.0", id, error: { code: -32601, message: `unknown method ${method}` } })
  }
}

let buffer = ""
process.stdin.setEncoding("utf8")
process.stdin.on("data", (chunk) => {
  buffer += chunk
  let index
  while ((index = buffer.indexOf("\n")) >= 0) {
    const line = buffer.slice(0, index).trim()
    buffer = buffer.slice(index + 1)
    if (line !== "") handle(JSON.parse(line))
  }
})
process.stdin.on("end", () => {
  if (process.env.MCP_TEST_IGNORE_EOF === "1") setInterval(() => {}, 1 << 30)
  else process.exit(0)
})
log(`ready ${process.pid}`)
