/**
 * `agent-loop mcp serve` driven by the official MCP SDK's client over stdio, against the real
 * command with a loopback model: `run_agent` returns the turn's answer with progress notifications
 * on the way; a cancelled call stops the turn now (the next call on the session sees the stop);
 * bad arguments and unknown tools are errors. Approvals: a client with elicitation is asked (allow
 * once, allow always, deny with a reason, no answer within the approval timeout), over stdio and
 * streamable HTTP; a client without it cannot be asked, and the call is denied saying why.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { CancelledNotificationSchema, type ElicitRequest, ElicitRequestSchema, type ElicitResult, type RequestId } from "@modelcontextprotocol/sdk/types.js"
import { spawn } from "node:child_process"
import { describe, expect, it } from "@effect/vitest"
import { STOPPED_NOTE } from "../../src/programs/internal/turnEnd.ts"
import { isolatedEnv, launcher, root, tempDir, type TestContext } from "../support/cliProcess.ts"
import { type Script, start } from "../support/openaiServer.ts"

/** How a client answers elicitations: given the request and its id. */
type Elicit = (request: ElicitRequest, id: RequestId) => Promise<ElicitResult>

/** A client, with the elicitation capability and its handler when `elicit` is given. */
const clientOf = (elicit?: Elicit) => {
  const client = new Client({ name: "test-client", version: "1.0.0" }, elicit === undefined ? {} : { capabilities: { elicitation: {} } })
  if (elicit !== undefined) client.setRequestHandler(ElicitRequestSchema, (request, extra) => elicit(request, extra.requestId))
  return client
}

const connect = async (
  context: TestContext,
  script: Script,
  extra: ReadonlyArray<string> = [],
  prepare?: (home: string) => void,
  elicit?: Elicit
) => {
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
  const client = clientOf(elicit)
  await client.connect(transport)
  context.onTestFinished(async () => {
    await client.close()
    await server.close()
  })
  return { client, server, workspace }
}

const textOf = (result: any) => result.content.map((part: any) => part.text).join("")

/** The tool results the model was sent in a request. */
const toolResults = (request: { readonly body: any }): Array<string> =>
  (request.body.messages as Array<{ role: string; content: unknown }>).flatMap((m) => m.role === "tool" ? [String(m.content)] : [])

/** Elicitations answered in turn by `answers`, each recorded. */
const answering = (answers: ReadonlyArray<ElicitResult>) => {
  const asked: Array<ElicitRequest["params"]> = []
  const elicit: Elicit = async (request) => {
    asked.push(request.params)
    return answers[asked.length - 1] ?? { action: "decline" }
  }
  return { asked, elicit }
}

/** `agent-loop mcp serve --http 0` with the token `the-token`: the endpoint's URL once it listens. */
const serveHttp = async (context: TestContext, script: Script, extra: ReadonlyArray<string> = []) => {
  const server = await start(script)
  const home = tempDir()
  const workspace = path.join(home, "ws")
  fs.mkdirSync(workspace)
  const child = spawn(process.execPath, [launcher, "mcp", "serve", "--http", "0", "--base-url", server.url, "--model", "fake-model", "--workspace", workspace, ...extra], {
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
  return { server, url, workspace, stderr: () => stderr }
}

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
    const { stderr, url } = await serveHttp(context, [{ text: "Over HTTP." }])
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
    expect(stderr()).not.toContain("the-token")
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

  it("approvals by elicitation: allow once runs the call; allow always adds a rule (the next call like it is not asked); the answer", async (context) => {
    const { asked, elicit } = answering([
      { action: "accept", content: { decision: "allow_once" } },
      { action: "accept", content: { decision: "allow_always" } }
    ])
    const { client, server } = await connect(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "expr 40 + 2" } }] },
      { toolCalls: [{ name: "exec", arguments: { command: "expr 2 + 3" } }] },
      { toolCalls: [{ name: "exec", arguments: { command: "expr 3 + 4" } }] },
      { text: "42, 5 and 7." }
    ], [], undefined, elicit)
    const result: any = await client.callTool({ name: "run_agent", arguments: { prompt: "add them up" } })
    expect(result.isError).toBe(false)
    expect(textOf(result)).toBe("42, 5 and 7.")
    // asked twice, in one line naming the tool and its arguments; the third call fell under the rule
    expect(asked).toHaveLength(2)
    expect(asked[0]!.message).toBe('agent-loop wants to run exec {"command":"expr 40 + 2"}')
    expect(asked[1]!.message).toBe('agent-loop wants to run exec {"command":"expr 2 + 3"}')
    const schema = (asked[0] as any).requestedSchema
    expect(schema.properties.decision.enum).toEqual(["allow_once", "allow_always", "deny"])
    expect(schema.properties.reason.type).toBe("string")
    expect(schema.required).toEqual(["decision"])
    expect(server.requests).toHaveLength(4)
    expect(toolResults(server.requests[3]!)).toEqual(["exit code: 0\n42\n", "exit code: 0\n5\n", "exit code: 0\n7\n"])
  })

  it("approvals by elicitation: a deny with a reason and a decline are not run, and the model is told", async (context) => {
    const { asked, elicit } = answering([
      { action: "accept", content: { decision: "deny", reason: "not on a Friday" } },
      { action: "decline" }
    ])
    const { client, server, workspace } = await connect(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "echo one > one.txt" } }] },
      { toolCalls: [{ name: "exec", arguments: { command: "echo two > two.txt" } }] },
      { text: "Neither was allowed." }
    ], [], undefined, elicit)
    const result: any = await client.callTool({ name: "run_agent", arguments: { prompt: "write them" } })
    expect(textOf(result)).toBe("Neither was allowed.")
    expect(asked).toHaveLength(2)
    expect(fs.existsSync(path.join(workspace, "one.txt"))).toBe(false)
    expect(fs.existsSync(path.join(workspace, "two.txt"))).toBe(false)
    const results = toolResults(server.requests[2]!)
    expect(results[0]).toContain("The user denied this call. They said: not on a Friday")
    expect(results[1]).toContain("The user denied this call.")
    expect(results[1]).not.toContain("They said")
  })

  it("a client without elicitation cannot be asked: the call is denied, the model is told why, and the result says so", async (context) => {
    const { client, server, workspace } = await connect(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "echo ran > ran.txt" } }] },
      { text: "It was not allowed." }
    ])
    const result: any = await client.callTool({ name: "run_agent", arguments: { prompt: "run it" } })
    expect(result.content[0].text).toBe("It was not allowed.")
    expect(result.content[1].text).toMatch(/denied 1 tool call that needed approval: this MCP client does not support elicitation/)
    expect(result.structuredContent).toMatchObject({ status: "completed", unaskedApprovals: 1 })
    expect(fs.existsSync(path.join(workspace, "ran.txt"))).toBe(false)
    expect(toolResults(server.requests[1]!).join("\n")).toMatch(/cannot be asked \(it does not support elicitation\).*--yes/)
  })

  it("a client that never answers: the approval timeout denies the call, the elicitation is cancelled, the turn goes on to its answer", async (context) => {
    const asked: Array<RequestId> = []
    const cancelled: Array<RequestId> = []
    const { client, server, workspace } = await connect(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "echo ran > ran.txt" } }] },
      { text: "Nobody answered." }
    ], ["--approval-timeout", "1"], undefined, (_request, id) => {
      asked.push(id)
      return new Promise<ElicitResult>(() => undefined)
    })
    // the server's cancellation of the question, as sent (the SDK's own handler ignores a request id 0)
    client.setNotificationHandler(CancelledNotificationSchema, (notification) => void cancelled.push(notification.params.requestId!))
    const startedAt = Date.now()
    const result: any = await client.callTool({ name: "run_agent", arguments: { prompt: "run it" } })
    expect(textOf(result)).toBe("Nobody answered.")
    // denied at the timeout, not left hanging
    expect(Date.now() - startedAt).toBeLessThan(30_000)
    expect(fs.existsSync(path.join(workspace, "ran.txt"))).toBe(false)
    expect(toolResults(server.requests[1]!).join("\n")).toMatch(/nobody answered the question about this call within 1 s/)
    expect(asked).toHaveLength(1)
    expect(cancelled).toEqual(asked)
  })

  it("--http: approvals by elicitation over streamable HTTP: allowed, the call runs, the answer", async (context) => {
    const { server, url } = await serveHttp(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "expr 40 + 2" } }] },
      { text: "It is 42." }
    ])
    const { asked, elicit } = answering([{ action: "accept", content: { decision: "allow_once" } }])
    const client = clientOf(elicit)
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: "Bearer the-token" } } }))
    context.onTestFinished(() => client.close())
    const result: any = await client.callTool({ name: "run_agent", arguments: { prompt: "add them" } })
    expect(textOf(result)).toBe("It is 42.")
    expect(asked.map((params) => params.message)).toEqual(['agent-loop wants to run exec {"command":"expr 40 + 2"}'])
    expect(toolResults(server.requests[1]!)).toEqual(["exit code: 0\n42\n"])
  })
})
