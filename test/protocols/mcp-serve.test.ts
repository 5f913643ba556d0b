/**
 * `agent-loop mcp serve` driven by the official MCP SDK's client over stdio, against the real
 * command with a loopback model: `run_agent` returns the turn's answer with progress notifications
 * on the way; a cancelled call stops the turn now (the next call on the session sees the stop);
 * bad arguments and unknown tools are errors.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { spawn } from "node:child_process"
import { describe, expect, it } from "@effect/vitest"
import { STOPPED_NOTE } from "../../src/programs/internal/turnEnd.ts"
import { isolatedEnv, launcher, root, tempDir, type TestContext } from "../support/cliProcess.ts"
import { type Script, start } from "../support/openaiServer.ts"

const connect = async (context: TestContext, script: Script, extra: ReadonlyArray<string> = [], prepare?: (home: string) => void) => {
  const server = await start(script)
  const home = tempDir()
  const workspace = path.join(home, "ws")
  fs.mkdirSync(workspace)
  prepare?.(home)
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [launcher, "mcp", "serve", "--base-url", server.url, "--model", "fake-model", "--workspace", workspace, ...extra],
    env: isolatedEnv(home),
    cwd: root,
    stderr: "pipe"
  })
  const client = new Client({ name: "test-client", version: "1.0.0" })
  await client.connect(transport)
  context.onTestFinished(async () => {
    await client.close()
    await server.close()
  })
  return { client, server, workspace }
}

const textOf = (result: any) => result.content.map((part: any) => part.text).join("")

describe("agent-loop mcp serve", () => {
  it("lists run_agent; a call runs a turn (a command approved by --yes) with progress, and answers", async (context) => {
    const { client, server } = await connect(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "echo from-the-tool" } }] },
      { text: "The tool said from-the-tool." },
      { text: "Still here." }
    ], ["--yes"])
    const tools = await client.listTools()
    expect(tools.tools.map((t) => t.name)).toEqual(["run_agent"])
    const progress: Array<string> = []
    const result: any = await client.callTool({ name: "run_agent", arguments: { prompt: "run the tool" } }, undefined, {
      onprogress: (p) => void progress.push(p.message ?? "")
    })
    expect(result.isError).toBe(false)
    expect(textOf(result)).toBe("The tool said from-the-tool.")
    expect(result.structuredContent).toMatchObject({ status: "completed" })
    expect(progress).toEqual(["thinking", "running exec", "exec done", "thinking"])
    expect(JSON.stringify(server.requests[1]!.body.messages)).toContain("from-the-tool")
    // the same session again: the model sees the conversation so far
    const again: any = await client.callTool({ name: "run_agent", arguments: { prompt: "and now?", session: result.structuredContent.session } })
    expect(textOf(again)).toBe("Still here.")
    expect(server.requests[2]!.body.messages.some((m: any) => m.content === "run the tool")).toBe(true)
  })

  it("a cancelled call stops the turn now: the command is stopped, the next call on the session sees the stop", async (context) => {
    const { client, server } = await connect(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "sleep 60" } }] },
      { text: "Picked up again." }
    ], ["--yes"])
    const controller = new AbortController()
    let session: string | undefined
    const called = client.callTool({ name: "run_agent", arguments: { prompt: "wait a minute", session: "mcp-cancel" } }, undefined, {
      signal: controller.signal,
      onprogress: (p) => {
        if (p.message === "running exec") controller.abort()
      }
    })
    await expect(called).rejects.toThrow()
    session = "mcp-cancel"
    // the stop is stored before the next call runs; poll for it through the next call's request
    const deadline = Date.now() + 60_000
    let result: any
    while (true) {
      try {
        result = await client.callTool({ name: "run_agent", arguments: { prompt: "go on", session } })
        break
      } catch (error) {
        // still stopping: the session is busy for a moment
        if (Date.now() > deadline) throw error
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
    expect(textOf(result)).toBe("Picked up again.")
    const messages = server.requests[1]!.body.messages.map((m: any) => [m.role, m.content])
    expect(messages).toContainEqual(["user", STOPPED_NOTE])
    expect(server.requests).toHaveLength(2)
  })

  it("bad input: no prompt, a bad session, an unknown tool", async (context) => {
    const { client } = await connect(context, [{ text: "unused" }])
    await expect(client.callTool({ name: "run_agent", arguments: {} })).rejects.toThrow(/prompt: a non-empty string is required/)
    await expect(client.callTool({ name: "run_agent", arguments: { prompt: "x", session: 42 } })).rejects.toThrow(/session/)
    await expect(client.callTool({ name: "no_such_tool", arguments: {} })).rejects.toThrow(/unknown tool/)
  })

  it("--http: streamable HTTP behind the bearer token (none or another: an empty 401), run_agent answers", async (context) => {
    const server = await start([{ text: "Over HTTP." }])
    const home = tempDir()
    const workspace = path.join(home, "ws")
    fs.mkdirSync(workspace)
    const child = spawn(process.execPath, [launcher, "mcp", "serve", "--http", "0", "--base-url", server.url, "--model", "fake-model", "--workspace", workspace], {
      cwd: root,
      env: isolatedEnv(home, { AGENT_LOOP_MCP_TOKEN: "the-token" }),
      stdio: ["ignore", "pipe", "pipe"]
    })
    context.onTestFinished(async () => {
      child.kill("SIGKILL")
      await server.close()
    })
    let stderr = ""
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no address within 60 s: ${stderr}`)), 60_000)
      child.stderr!.on("data", (chunk) => {
        stderr += chunk.toString()
        const found = /MCP server at (\S+)/.exec(stderr)
        if (found) {
          clearTimeout(timer)
          resolve(found[1]!)
        }
      })
    })
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
    expect(stderr).not.toContain("the-token")
    const initialize = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "1" } } })
    for (const headers of [{}, { authorization: "Bearer wrong" }]) {
      const refused = await fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers }, body: initialize })
      expect(refused.status).toBe(401)
      expect(await refused.text()).toBe("")
    }
    const client = new Client({ name: "http-client", version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: "Bearer the-token" } } }))
    const result: any = await client.callTool({ name: "run_agent", arguments: { prompt: "hello" } })
    expect(textOf(result)).toBe("Over HTTP.")
    await client.close()
  })

  it("named agents: run_agent offers those --mcp-agents names as agent; a call runs as that agent (its system prompt and tools), another name is an error, none runs the agent itself", async (context) => {
    const { client, server } = await connect(context, [{ text: "Reviewed." }, { text: "Plain." }], ["--yes", "--mcp-agents", "reviewer"], (home) => {
      const agents = path.join(home, "config", "agent-loop", "agents")
      fs.mkdirSync(agents, { recursive: true })
      fs.writeFileSync(path.join(agents, "reviewer.md"), "---\nname: reviewer\ndescription: Reviews code\ntools: read_file, grep\n---\nYou are a careful reviewer.\n")
      fs.writeFileSync(path.join(agents, "writer.md"), "---\nname: writer\ndescription: Writes code\n---\nYou write code.\n")
    })
    const tools = await client.listTools()
    const schema = tools.tools[0]!.inputSchema as any
    expect(schema.properties.agent.enum).toEqual(["reviewer"])
    expect(tools.tools[0]!.description).toContain("- reviewer: Reviews code")
    expect(tools.tools[0]!.description).not.toContain("writer")

    const reviewed: any = await client.callTool({ name: "run_agent", arguments: { prompt: "review it", agent: "reviewer" } })
    expect(textOf(reviewed)).toBe("Reviewed.")
    expect(reviewed.structuredContent).toMatchObject({ status: "completed", agent: "reviewer" })
    const asAgent = server.requests[0]!.body
    expect(asAgent.messages[0]).toMatchObject({ role: "system", content: "You are a careful reviewer." })
    expect(asAgent.tools.map((t: any) => t.function.name).sort()).toEqual(["grep", "read_file"])

    // an agent that is not offered: an error naming the ones that are, and no turn
    await expect(client.callTool({ name: "run_agent", arguments: { prompt: "write it", agent: "writer" } })).rejects.toThrow(/agent: one of reviewer/)
    expect(server.requests).toHaveLength(1)

    // without agent: the agent itself, its own system prompt and every tool
    const plain: any = await client.callTool({ name: "run_agent", arguments: { prompt: "hello" } })
    expect(textOf(plain)).toBe("Plain.")
    const itself = server.requests[1]!.body
    expect(itself.messages[0].content).not.toContain("careful reviewer")
    expect(itself.tools.map((t: any) => t.function.name)).toContain("exec")
  })
})
