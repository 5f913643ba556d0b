/**
 * A small MCP server over stdio (line-delimited JSON-RPC 2.0) for tests, run with `process.execPath`.
 *
 * Tools: `lookup` (read-only; `barrier: n` holds the reply until n lookups have started, so
 * overlapping calls can be proven without timing; key "huge:N" answers N characters of "é",
 * key "picture" an image, key "blob" a binary resource), `put` (mutating; a key starting with "!" gives an `isError` result, key
 * "__exit__" writes to stderr and kills the server mid-call, key "__hang__" never answers, a
 * non-string key is a JSON-RPC error). Every event is appended synchronously to the file named by
 * `MCP_TEST_LOG`, one per line: `ready <pid>`, `initialize <version>`, `start <tool> <key>`,
 * `end <tool> <key>`.
 *
 * Misbehaviour, by `NAME=value` arguments (or the environment, for the names not given):
 * - `MCP_TEST_VERSIONS=a,b`: the protocol versions it speaks, newest first. It answers `initialize`
 *   with the requested one if it is among them, else with the first (as the MCP SDKs do); under
 *   2024-11-05 its tools carry no annotations (they came later). Default: whatever is asked.
 * - `MCP_TEST_REFUSE=1`: an unsupported version is refused with a JSON-RPC error naming the
 *   supported ones instead.
 * - `MCP_TEST_MODE=crash`: writes to stderr and exits 1 at start. `silent`: never answers anything.
 *   `noise`: writes lines that are not JSON-RPC to stdout (and stderr) around every answer.
 *   `endless`: answers `initialize` with a line that never ends. `waiting`: at `initialize`, writes
 *   what a server stuck on the network would (a line on stdout, two on stderr), logs it, and never answers.
 * - `MCP_TEST_IGNORE_EOF=1` keeps the process alive after stdin closes (a server that must be killed).
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
    annotations: { readOnlyHint: true, idempotentHint: true }
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

const setting = (name) => {
  const arg = process.argv.slice(2).find((a) => a.startsWith(`${name}=`))
  return arg === undefined ? process.env[name] : arg.slice(name.length + 1)
}
const mode = setting("MCP_TEST_MODE") ?? ""
const versions = (setting("MCP_TEST_VERSIONS") ?? "").split(",").filter((v) => v !== "")
let version = ""

if (mode === "crash") {
  process.stderr.write("starting up\nError: cannot open the database at /nowhere\n")
  process.exit(1)
}

const store = new Map([["a", "alpha"], ["b", "beta"]])
let lookupsStarted = 0
const waiters = []

const send = (message) => {
  if (mode === "noise") {
    process.stdout.write("Server log: handling a request\n\n   \nDEBUG {not json\n")
    process.stderr.write(`noise on stderr; GIVEN_TOKEN=${process.env.GIVEN_TOKEN ?? ""}\n`)
  }
  process.stdout.write(JSON.stringify(message) + "\n")
}
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
  if (key === "blob") {
    return {
      content: [{
        type: "resource",
        resource: { uri: "file:///data.bin", mimeType: "application/octet-stream", blob: Buffer.from([1, 2, 3, 4, 5]).toString("base64") }
      }]
    }
  }
  if (key.startsWith("env:")) return text(process.env[key.slice(4)] ?? "(unset)")
  if (key.startsWith("huge:")) return text("é".repeat(Number(key.slice(5))))
  return text(store.has(key) ? `${key}=${store.get(key)}` : `${key} not found`)
}

const put = ({ key, value }) => {
  if (key === "__exit__") {
    process.stderr.write("fatal: the store is on fire\n")
    process.exit(3)
  }
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
  if (args.key === "__hang__") return
  const result = params.name === "lookup" ? await lookup(args) : put(args)
  log(`end ${params.name} ${args.key}`)
  send({ jsonrpc: "2.0", id, result })
}

const handle = (message) => {
  const { id, method, params } = message
  if (id === undefined || mode === "silent") return
  switch (method) {
    case "initialize": {
      const requested = params.protocolVersion
      if (mode === "waiting") {
        process.stdout.write("Fetching the package index...\n")
        process.stderr.write("npm warn fetch GET https://registry.example/ failed: UNABLE_TO_GET_ISSUER_CERT_LOCALLY\nnpm warn retrying in 10 seconds\n")
      }
      log(`initialize ${requested}`)
      if (mode === "waiting") return
      if (versions.length > 0 && !versions.includes(requested) && setting("MCP_TEST_REFUSE") === "1") {
        return send({
          jsonrpc: "2.0",
          id,
          error: { code: -32602, message: "Unsupported protocol version", data: { supported: versions, requested } }
        })
      }
      version = versions.length === 0 || versions.includes(requested) ? requested : versions[0]
      if (mode === "endless") {
        const chunk = "x".repeat(1 << 20)
        const more = () => process.stdout.write(chunk, more)
        return more()
      }
      return send({
        jsonrpc: "2.0",
        id,
        result: {
          protocolVersion: version,
          capabilities: { tools: {} },
          serverInfo: { name: "test-server", version: "1.0.0" }
        }
      })
    }
    case "ping":
      return send({ jsonrpc: "2.0", id, result: {} })
    case "tools/list":
      return send({
        jsonrpc: "2.0",
        id,
        result: { tools: version === "2024-11-05" ? tools.map(({ annotations, ...tool }) => tool) : tools }
      })
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
  if (setting("MCP_TEST_IGNORE_EOF") === "1") setInterval(() => {}, 1 << 30)
  else process.exit(0)
})
log(`ready ${process.pid}`)
