/**
 * Helpers for tests of MCP servers: our stdio test server (`mcpServer.mjs`) configured with a log
 * file and misbehaviours, the real servers installed from npm, and calling a tool as the loop does.
 */
import { Effect, Logger } from "effect"
import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { fileURLToPath } from "node:url"
import { type McpTools, Tool } from "effect-agent-loop"
import { waitUntil } from "./waitUntil.ts"

/** The stdio test server's script. */
export const serverScript = fileURLToPath(new URL("./mcpServer.mjs", import.meta.url))

/** A real server's entry point from `node_modules` (e.g. `server-filesystem`). */
export const npmServer = (name: string): string =>
  fileURLToPath(new URL(`../../node_modules/@modelcontextprotocol/${name}/dist/index.js`, import.meta.url))

const context: Tool.ToolContext = { toolCallId: "call-1", turnId: "turn-1", sessionKey: "s", iteration: 0, depth: 0 }

/** A temp dir for the server's log (and config files), removed with the scope. */
export const tempDir = Effect.acquireRelease(
  Effect.sync(() => nodeFs.mkdtempSync(nodePath.join(os.tmpdir(), "mcp-"))),
  (dir) => Effect.sync(() => nodeFs.rmSync(dir, { recursive: true, force: true }))
)

/** The test server logging to `log`, with extra environment (the `MCP_TEST_*` misbehaviours) and config. */
export const serverConfig = (
  log: string,
  env: Record<string, string> = {},
  extra: Partial<McpTools.McpServerConfigInput> = {}
): McpTools.McpServerConfigInput => ({
  command: process.execPath,
  args: [serverScript],
  env: { MCP_TEST_LOG: log, ...env },
  ...extra
} as McpTools.McpServerConfigInput)

/**
 * The test server logging to `log`, with `MCP_TEST_*` switches passed as arguments: unlike `env`
 * values, arguments are not secrets, so they are not scrubbed from what the server says.
 */
export const testServer = (
  log: string,
  switches: Record<string, string> = {},
  extra: Partial<McpTools.McpServerConfigInput> = {}
): McpTools.McpServerConfigInput => ({
  command: process.execPath,
  args: [serverScript, ...Object.entries(switches).map(([name, value]) => `${name}=${value}`)],
  env: { MCP_TEST_LOG: log },
  ...extra
} as McpTools.McpServerConfigInput)

/** The lines the test server logged. */
export const logLines = (log: string): ReadonlyArray<string> =>
  nodeFs.existsSync(log) ? nodeFs.readFileSync(log, "utf8").split("\n").filter((l) => l !== "") : []

/**
 * Waits, on real I/O and with a deadline, until the test server has logged a line that `matches`:
 * a test on the `TestClock` arms a timeout first, then moves the clock only once the server is there.
 */
export const untilLogged = (log: string, matches: (line: string) => boolean) =>
  Effect.promise(() => waitUntil(`a matching line in ${log}`, () => logLines(log).some(matches)))

/** The pid the test server logged at start. */
export const pidOf = (log: string): number => Number(logLines(log).find((l) => l.startsWith("ready "))!.slice(6))

/** Whether `pid` runs (a zombie runs nothing). */
export const isAlive = (pid: number): boolean => {
  try {
    const stat = nodeFs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z"
  } catch {
    return false
  }
}

/** The tool called `name`. */
export const byName = <T extends { readonly name: string }>(tools: ReadonlyArray<T>, name: string): T => {
  const tool = tools.find((t) => t.name === name)
  if (tool === undefined) throw new Error(`no tool ${name}`)
  return tool
}

/** Decodes the arguments and runs the tool, as the loop does after approval. */
export const call = (tools: ReadonlyArray<Tool.Tool<never>>, name: string, args: unknown) => {
  const tool = byName(tools, name)
  return tool.decode(args).pipe(Effect.orDie, Effect.flatMap((decoded) => tool.execute(decoded, context)), Effect.map(Tool.toOutput))
}

/** A logger that keeps every log line with its level, to see what the MCP layer warns about. */
export const captureLogs = () => {
  const lines: Array<{ readonly level: string; readonly text: string }> = []
  const logger = Logger.make(({ logLevel, message }) => {
    const parts = Array.isArray(message) ? message : [message]
    lines.push({ level: logLevel, text: parts.map((part) => typeof part === "string" ? part : JSON.stringify(part)).join(" ") })
  })
  return {
    warnings: () => lines.filter((line) => line.level === "Warn").map((line) => line.text),
    lines,
    layer: Logger.layer([logger])
  }
}
