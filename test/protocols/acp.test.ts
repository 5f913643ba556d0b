/**
 * `agent-loop acp` driven by the official ACP SDK's client side, as a scripted editor, against the
 * real command over stdio with a loopback model: a prompt whose tool call needs approval (allowed
 * in the editor) streams its updates and answers; a cancel mid-tool ends the prompt `cancelled`
 * at once with nothing half-done; a session loaded after a restart replays its history; bad input
 * gets JSON-RPC errors.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { Readable, Writable } from "node:stream"
import * as acp from "@agentclientprotocol/sdk"
import { describe, expect, it } from "@effect/vitest"
import { STOPPED_NOTE } from "../../src/programs/internal/turnEnd.ts"
import { isolatedEnv, launcher, root, tempDir, type TestContext } from "../support/cliProcess.ts"
import { gate, type Script, start } from "../support/openaiServer.ts"

interface Editor {
  readonly agent: acp.ClientContext
  readonly updates: Array<acp.SessionNotification>
  readonly permissions: Array<acp.RequestPermissionRequest>
  readonly child: ChildProcess
  readonly stderr: () => string
  readonly close: () => Promise<void>
}

/** What an editor offers besides permission answers: more flags for the agent, and more handlers (`fs/*`, `terminal/*`). */
interface EditorOptions {
  readonly args?: ReadonlyArray<string>
  readonly handlers?: (app: ReturnType<typeof acp.client>) => ReturnType<typeof acp.client>
}

/** How the editor answers a permission request; `signal` aborts when the agent cancels the request. */
type Answer = (request: acp.RequestPermissionRequest, signal: AbortSignal) => acp.RequestPermissionResponse | Promise<acp.RequestPermissionResponse>

/** `agent-loop acp` in `home`, and an editor connected to it that answers permission requests with `answer`. */
const editor = (
  home: string,
  url: string,
  answer: Answer,
  options: EditorOptions = {}
): Editor => {
  const workspace = path.join(home, "ws")
  fs.mkdirSync(workspace, { recursive: true })
  const child = spawn(process.execPath, [launcher, "acp", "--base-url", url, "--model", "fake-model", "--workspace", workspace, ...(options.args ?? [])], {
    cwd: root,
    env: isolatedEnv(home),
    stdio: ["pipe", "pipe", "pipe"]
  })
  let stderr = ""
  child.stderr!.on("data", (chunk) => (stderr += chunk.toString()))
  const updates: Array<acp.SessionNotification> = []
  const permissions: Array<acp.RequestPermissionRequest> = []
  const base = acp.client({ name: "scripted-editor" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      updates.push(params)
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params, signal }) => {
      permissions.push(params)
      return answer(params, signal)
    })
  const app = options.handlers === undefined ? base : options.handlers(base)
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>)
  const connection = app.connect(stream)
  return {
    agent: connection.agent,
    updates,
    permissions,
    child,
    stderr: () => stderr,
    close: async () => {
      connection.close()
      child.stdin!.end()
      if (child.exitCode === null) await new Promise((resolve) => child.once("exit", resolve))
    }
  }
}

const setup = async (
  context: TestContext,
  script: Script,
  answer: Answer,
  options: EditorOptions = {}
) => {
  const server = await start(script)
  const home = tempDir()
  const opened: Array<Editor> = []
  context.onTestFinished(async () => {
    for (const each of opened) {
      each.child.kill("SIGKILL")
    }
    await server.close()
  })
  const open = () => {
    const made = editor(home, server.url, answer, options)
    opened.push(made)
    return made
  }
  return { server, home, open }
}

const allowOnce = (request: acp.RequestPermissionRequest): acp.RequestPermissionResponse => ({
  outcome: { outcome: "selected", optionId: request.options.find((o) => o.kind === "allow_once")!.optionId }
})

const initialize = (agent: acp.ClientContext, clientCapabilities: acp.ClientCapabilities = {}) =>
  agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities })

/** An editor's terminals (`terminal/*`): each command run with `sh` as the editor would, every request logged. */
const scriptedTerminals = (context: TestContext, log: Array<string>) => {
  const terminals = new Map<string, { readonly child: ChildProcess; output: string; exit: acp.WaitForTerminalExitResponse | undefined; readonly exited: Promise<acp.WaitForTerminalExitResponse> }>()
  const stop = (id: string) => {
    const terminal = terminals.get(id)
    if (terminal !== undefined && terminal.exit === undefined) {
      try {
        process.kill(-terminal.child.pid!, "SIGKILL")
      } catch {
        // already gone
      }
    }
  }
  context.onTestFinished(() => {
    for (const id of terminals.keys()) stop(id)
  })
  return (app: ReturnType<typeof acp.client>) =>
    app
      .onRequest(acp.methods.client.terminal.create, ({ params }) => {
        const id = `term-${terminals.size + 1}`
        log.push(`create ${id}: ${params.command} ${(params.args ?? []).join(" ")} in ${params.cwd}`)
        const child = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? undefined, detached: true, stdio: ["ignore", "pipe", "pipe"] })
        const exited = new Promise<acp.WaitForTerminalExitResponse>((resolve) =>
          child.once("exit", (exitCode, signal) => {
            terminal.exit = { exitCode, signal }
            resolve(terminal.exit)
          })
        )
        const terminal: { child: ChildProcess; output: string; exit: acp.WaitForTerminalExitResponse | undefined; exited: Promise<acp.WaitForTerminalExitResponse> } = { child, output: "", exit: undefined, exited }
        child.stdout!.on("data", (chunk) => (terminal.output += chunk.toString()))
        child.stderr!.on("data", (chunk) => (terminal.output += chunk.toString()))
        terminals.set(id, terminal)
        return { terminalId: id }
      })
      .onRequest(acp.methods.client.terminal.output, ({ params }) => {
        const terminal = terminals.get(params.terminalId)!
        return { output: terminal.output, truncated: false, ...(terminal.exit === undefined ? {} : { exitStatus: terminal.exit }) }
      })
      .onRequest(acp.methods.client.terminal.waitForExit, ({ params }) => terminals.get(params.terminalId)!.exited)
      .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
        log.push(`kill ${params.terminalId}`)
        stop(params.terminalId)
        return {}
      })
      .onRequest(acp.methods.client.terminal.release, ({ params }) => {
        log.push(`release ${params.terminalId}`)
        stop(params.terminalId)
        return {}
      })
}

/** The text of the tool results the model was sent, in order. */
const toolResults = (request: { readonly body: any }): Array<string> =>
  (request.body.messages as Array<{ role: string; content: unknown }>).flatMap((m) => m.role === "tool" ? [String(m.content)] : [])

describe("agent-loop acp", () => {
  it("initialize, a prompt with an edit (a diff) and a command that needs approval (allowed in the editor), updates streamed, the answer; load after a restart replays it", async (context) => {
    const { home, open, server } = await setup(context, [
      {
        text: "Writing it.",
        toolCalls: [{ name: "write_file", arguments: { path: "note.txt", content: "hello\n" } }, { name: "exec", arguments: { command: "cat note.txt" } }]
      },
      { text: "Done." }
    ], allowOnce)
    const first = open()
    const init = await initialize(first.agent)
    expect(init.protocolVersion).toBe(acp.PROTOCOL_VERSION)
    expect(init.agentCapabilities?.loadSession).toBe(true)
    const workspace = path.join(home, "ws")
    const { sessionId } = await first.agent.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] })
    const response = await first.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "write a note" }] })
    expect(response.stopReason).toBe("end_turn")
    expect(fs.readFileSync(path.join(workspace, "note.txt"), "utf8")).toBe("hello\n")
    // asked once, for the command (a write in the workspace needs no approval), with the loop's options
    expect(first.permissions).toHaveLength(1)
    expect(first.permissions[0]!.toolCall).toMatchObject({ kind: "execute", status: "pending", title: "exec cat note.txt" })
    expect(first.permissions[0]!.options.map((o) => o.kind)).toContain("reject_once")
    const kinds = first.updates.map((u) => u.update.sessionUpdate)
    expect(kinds).toContain("agent_message_chunk")
    const call = first.updates.find((u) => u.update.sessionUpdate === "tool_call")!.update as acp.ToolCall
    expect(call).toMatchObject({ kind: "edit", status: "in_progress", locations: [{ path: path.join(workspace, "note.txt") }] })
    expect(call.content).toEqual([{ type: "diff", path: path.join(workspace, "note.txt"), oldText: null, newText: "hello\n" }])
    const ended = first.updates.flatMap((u) => u.update.sessionUpdate === "tool_call_update" && u.update.status === "completed" ? [u.update] : [])
    expect(ended).toHaveLength(2)
    expect(JSON.stringify(ended[1]!.content)).toContain("hello")
    const text = first.updates.flatMap((u) => u.update.sessionUpdate === "agent_message_chunk" && u.update.content.type === "text" ? [u.update.content.text] : []).join("")
    expect(text).toBe("Writing it.Done.")
    expect(server.requests).toHaveLength(2)
    await first.close()

    // a new process: the session is loaded from the store, its history replayed as updates
    const second = open()
    await initialize(second.agent)
    await second.agent.request(acp.methods.agent.session.load, { sessionId, cwd: workspace, mcpServers: [] })
    const replayed = second.updates.map((u) => u.update)
    expect(replayed[0]).toEqual({ sessionUpdate: "user_message_chunk", content: { type: "text", text: "write a note" } })
    expect(replayed.filter((u) => u.sessionUpdate === "tool_call").map((u) => u.sessionUpdate === "tool_call" && [u.kind, u.status])).toEqual([["edit", "completed"], ["execute", "completed"]])
    expect(replayed.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.sessionUpdate === "agent_message_chunk" && u.content.type === "text" && u.content.text)).toEqual(["Writing it.", "Done."])
    await second.close()
  })

  it("cancel mid-tool: the prompt answers cancelled at once, the command is stopped, the stop is in the session", async (context) => {
    const never = gate()
    const { home, open, server } = await setup(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "sleep 60 && echo late > late.txt" } }] },
      { text: "never", hold: never.promise }
    ], allowOnce)
    const editor = open()
    await initialize(editor.agent)
    const workspace = path.join(home, "ws")
    const { sessionId } = await editor.agent.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] })
    const answered = editor.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "run it" }] })
    const deadline = Date.now() + 60_000
    while (!editor.updates.some((u) => u.update.sessionUpdate === "tool_call" && u.update.status === "in_progress")) {
      if (Date.now() > deadline) throw new Error(`the tool did not start: ${editor.stderr()}`)
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    const cancelledAt = Date.now()
    await editor.agent.notify(acp.methods.agent.session.cancel, { sessionId })
    const response = await answered
    expect(response.stopReason).toBe("cancelled")
    // ACP asks for "within a couple of seconds"; loaded machines get some slack
    expect(Date.now() - cancelledAt).toBeLessThan(10_000)
    expect(server.requests).toHaveLength(1)
    expect(fs.existsSync(path.join(workspace, "late.txt"))).toBe(false)
    expect(editor.updates.some((u) => u.update.sessionUpdate === "tool_call_update" && u.update.status === "failed")).toBe(true)
    await editor.close()
    // the stopped turn is stored, with its record
    const again = open()
    await initialize(again.agent)
    await again.agent.request(acp.methods.agent.session.load, { sessionId, cwd: workspace, mcpServers: [] })
    const users = again.updates.flatMap((u) => u.update.sessionUpdate === "user_message_chunk" && u.update.content.type === "text" ? [u.update.content.text] : [])
    expect(users).toEqual(["run it", STOPPED_NOTE])
    await again.close()
  })

  it("a client that goes away mid-turn: the turn is stopped now and saved, the process ends", async (context) => {
    const never = gate()
    const { home, open } = await setup(context, [{ text: ["Half of it"], hold: never.promise }], allowOnce)
    const editor = open()
    await initialize(editor.agent)
    const workspace = path.join(home, "ws")
    const { sessionId } = await editor.agent.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] })
    void editor.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "start something" }] }).catch(() => undefined)
    const deadline = Date.now() + 60_000
    while (!editor.updates.some((u) => u.update.sessionUpdate === "agent_message_chunk")) {
      if (Date.now() > deadline) throw new Error(`no text streamed: ${editor.stderr()}`)
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    // the editor goes away: its end of stdin closes
    editor.child.stdin!.end()
    const code = await new Promise((resolve) => editor.child.once("exit", resolve))
    expect(code).toBe(0)
    const again = open()
    await initialize(again.agent)
    await again.agent.request(acp.methods.agent.session.load, { sessionId, cwd: workspace, mcpServers: [] })
    const replayed = again.updates.map((u) => u.update.sessionUpdate === "user_message_chunk" || u.update.sessionUpdate === "agent_message_chunk"
      ? [u.update.sessionUpdate, u.update.content.type === "text" ? u.update.content.text : ""]
      : [u.update.sessionUpdate])
    expect(replayed).toEqual([
      ["user_message_chunk", "start something"],
      ["agent_message_chunk", "Half of it"],
      ["user_message_chunk", STOPPED_NOTE]
    ])
    await again.close()
  })

  it("bad input: an unknown session, an unknown method, a malformed line; the connection still works", async (context) => {
    const { home, open } = await setup(context, [{ text: "Fine." }], allowOnce)
    const editor = open()
    await initialize(editor.agent)
    await expect(editor.agent.request(acp.methods.agent.session.prompt, { sessionId: "no-such-session", prompt: [{ type: "text", text: "hi" }] }))
      .rejects.toMatchObject({ code: -32002 })
    await expect(editor.agent.request(acp.methods.agent.session.load, { sessionId: "no-such-session", cwd: home, mcpServers: [] }))
      .rejects.toMatchObject({ code: -32002 })
    await expect(editor.agent.request("no/such_method", {})).rejects.toMatchObject({ code: -32601 })
    editor.child.stdin!.write("{ this is not json\n")
    const { sessionId } = await editor.agent.request(acp.methods.agent.session.new, { cwd: path.join(home, "ws"), mcpServers: [] })
    const response = await editor.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "hi" }] })
    expect(response.stopReason).toBe("end_turn")
    await editor.close()
  })

  it("an editor offering fs/*: read_file sees its unsaved buffer, edits and new files land in its buffers (not on disk), a path outside the workspace is refused before the editor is asked", async (context) => {
    const buffers = new Map<string, string>()
    const asked: Array<string> = []
    const { home, open, server } = await setup(context, [
      { toolCalls: [{ name: "read_file", arguments: { path: "a.txt" } }] },
      { toolCalls: [{ name: "edit_file", arguments: { path: "a.txt", old_text: "unsaved", new_text: "edited" } }] },
      { toolCalls: [{ name: "write_file", arguments: { path: "sub/b.txt", content: "new\n" } }] },
      { toolCalls: [{ name: "write_file", arguments: { path: "../outside.txt", content: "no\n" } }] },
      { toolCalls: [{ name: "read_file", arguments: { path: "missing.txt" } }] },
      { text: "Done." }
    ], allowOnce, {
      handlers: (app) =>
        app
          .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
            asked.push(`read ${params.path}`)
            const content = buffers.get(params.path) ?? (fs.existsSync(params.path) ? fs.readFileSync(params.path, "utf8") : undefined)
            if (content === undefined) throw acp.RequestError.resourceNotFound(params.path)
            return { content }
          })
          .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
            asked.push(`write ${params.path}`)
            buffers.set(params.path, params.content)
            return {}
          })
    })
    const workspace = path.join(home, "ws")
    fs.mkdirSync(workspace, { recursive: true })
    const real = fs.realpathSync(workspace)
    fs.writeFileSync(path.join(workspace, "a.txt"), "saved text\n")
    // the editor holds unsaved changes of a.txt
    buffers.set(path.join(real, "a.txt"), "unsaved text\n")
    const editor = open()
    await initialize(editor.agent, { fs: { readTextFile: true, writeTextFile: true } })
    const { sessionId } = await editor.agent.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] })
    const response = await editor.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "edit a.txt" }] })
    expect(response.stopReason).toBe("end_turn")
    const results = toolResults(server.requests.at(-1)!)
    expect(results[0]).toContain("unsaved text")
    expect(results[1]).toContain("Edited \"a.txt\"")
    expect(results[2]).toContain("Created \"sub/b.txt\"")
    expect(results[3]).toMatch(/escapes the workspace root/)
    expect(results[4]).toMatch(/does not exist/)
    expect(buffers.get(path.join(real, "a.txt"))).toBe("edited text\n")
    expect(buffers.get(path.join(real, "sub", "b.txt"))).toBe("new\n")
    // the disk is untouched: the edits are the editor's to save
    expect(fs.readFileSync(path.join(workspace, "a.txt"), "utf8")).toBe("saved text\n")
    expect(fs.existsSync(path.join(workspace, "sub", "b.txt"))).toBe(false)
    expect(fs.existsSync(path.join(home, "outside.txt"))).toBe(false)
    // the editor was asked about workspace paths only
    expect(asked).toEqual([
      `read ${path.join(real, "a.txt")}`,
      `read ${path.join(real, "a.txt")}`,
      `write ${path.join(real, "a.txt")}`,
      `read ${path.join(real, "sub", "b.txt")}`,
      `write ${path.join(real, "sub", "b.txt")}`,
      `read ${path.join(real, "missing.txt")}`
    ])
    await editor.close()
  })

  it("an editor that offers no fs/*: the files are read and written on disk", async (context) => {
    const { home, open } = await setup(context, [
      { toolCalls: [{ name: "write_file", arguments: { path: "c.txt", content: "on disk\n" } }] },
      { text: "Done." }
    ], allowOnce, {
      handlers: (app) => app.onRequest(acp.methods.client.fs.writeTextFile, () => {
        throw new Error("not offered, never asked")
      })
    })
    const editor = open()
    await initialize(editor.agent)
    const workspace = path.join(home, "ws")
    const { sessionId } = await editor.agent.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] })
    const response = await editor.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "write" }] })
    expect(response.stopReason).toBe("end_turn")
    expect(fs.readFileSync(path.join(workspace, "c.txt"), "utf8")).toBe("on disk\n")
    await editor.close()
  })

  it("session modes: default, acceptEdits, plan and bypassPermissions offered, set_mode changes what is asked; the todo list streams as the plan and load replays it", async (context) => {
    const todos = [
      { content: "Look around", status: "completed" },
      { content: "Say hi", status: "in_progress", activeForm: "Saying hi" }
    ]
    const { home, open } = await setup(context, [
      { toolCalls: [{ name: "todo_write", arguments: { todos } }] },
      { toolCalls: [{ name: "exec", arguments: { command: "echo hi" } }] },
      { text: "Said it." },
      { toolCalls: [{ name: "exec", arguments: { command: "echo again" } }] },
      { text: "Again." }
    ], allowOnce)
    const editor = open()
    await initialize(editor.agent)
    const workspace = path.join(home, "ws")
    const created = await editor.agent.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] })
    const { sessionId } = created
    expect(created.modes?.currentModeId).toBe("default")
    expect(created.modes?.availableModes.map((m) => m.id)).toEqual(["default", "acceptEdits", "plan", "bypassPermissions"])
    await expect(editor.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "auto" })).rejects.toMatchObject({ code: -32602 })

    await editor.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "bypassPermissions" })
    const first = await editor.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "plan and say hi" }] })
    expect(first.stopReason).toBe("end_turn")
    // bypassPermissions: the command ran without asking
    expect(editor.permissions).toHaveLength(0)
    const plans = editor.updates.flatMap((u) => u.update.sessionUpdate === "plan" ? [u.update.entries] : [])
    expect(plans).toEqual([[
      { content: "Look around", status: "completed", priority: "medium" },
      { content: "Say hi", status: "in_progress", priority: "medium" }
    ]])
    expect(editor.updates.some((u) => u.update.sessionUpdate === "tool_call_update" && u.update.status === "completed" && JSON.stringify(u.update.content).includes("hi"))).toBe(true)

    await editor.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "acceptEdits" })
    const second = await editor.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "again" }] })
    expect(second.stopReason).toBe("end_turn")
    // back under the rules: the command is asked about
    expect(editor.permissions).toHaveLength(1)
    expect(editor.permissions[0]!.toolCall.title).toBe("exec echo again")
    await editor.close()

    const again = open()
    await initialize(again.agent)
    const loaded = await again.agent.request(acp.methods.agent.session.load, { sessionId, cwd: workspace, mcpServers: [] })
    expect(loaded.modes?.currentModeId).toBe("default")
    expect(again.updates.filter((u) => u.update.sessionUpdate === "plan")).toHaveLength(1)
    await again.close()
  })

  it("plan mode: the model only reads; its plan is asked about (switch_mode); keep planning sends it back, yes with edits leaves plan mode (current_mode_update) and the turn writes", async (context) => {
    const plan = "1. Create `p.txt`"
    const names = (request: any): ReadonlyArray<string> => (request.body.tools ?? []).map((tool: any) => tool.function.name)
    const script = (request: any) => {
      const messages = request.body.messages
      if (messages.at(-1)?.tool_call_id === "w1") return { text: "Written." }
      if (names(request).includes("write_file")) return { toolCalls: [{ id: "w1", name: "write_file", arguments: { path: "p.txt", content: "planned\n" } }] }
      return { toolCalls: [{ id: `p${messages.length}`, name: "exit_plan_mode", arguments: { plan } }] }
    }
    // the first plan: keep planning; the second: yes, and accept edits
    const answers = ["reject_once", "allow_always"]
    const { home, open, server } = await setup(context, script, (request) => {
      const kind = answers.shift()
      return { outcome: { outcome: "selected", optionId: request.options.find((o) => o.kind === kind)!.optionId } }
    })
    const editor = open()
    await initialize(editor.agent)
    const workspace = path.join(home, "ws")
    const { sessionId } = await editor.agent.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] })
    await editor.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "plan" })
    const response = await editor.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "make p.txt" }] })
    expect(response.stopReason).toBe("end_turn")
    expect(names(server.requests[0])).toContain("exit_plan_mode")
    expect(names(server.requests[0])).not.toContain("write_file")
    expect(editor.permissions).toHaveLength(2)
    expect(editor.permissions[0]!.toolCall).toMatchObject({ kind: "switch_mode", content: [{ type: "content", content: { type: "text", text: plan } }] })
    expect(editor.permissions[0]!.options.map((o) => o.name)).toEqual(["Yes, and accept edits", "Yes", "No, keep planning"])
    expect(toolResults(server.requests[1]!).at(-1)).toContain("keep planning")
    expect(editor.updates.filter((u) => u.update.sessionUpdate === "current_mode_update").map((u) => (u.update as any).currentModeId)).toEqual(["acceptEdits"])
    expect(fs.readFileSync(path.join(workspace, "p.txt"), "utf8")).toBe("planned\n")
    await editor.close()
  })

  it("started with --yes: sessions start in bypassPermissions", async (context) => {
    const { home, open } = await setup(context, [{ text: "Fine." }], allowOnce, { args: ["--yes"] })
    const editor = open()
    await initialize(editor.agent)
    const created = await editor.agent.request(acp.methods.agent.session.new, { cwd: path.join(home, "ws"), mcpServers: [] })
    expect(created.modes?.currentModeId).toBe("bypassPermissions")
    await editor.close()
  })

  it("custom slash commands: advertised to every session (available_commands_update), and /NAME ARGS runs the command's prompt", async (context) => {
    const { home, open, server } = await setup(context, [{ text: "Hello, Ann." }], allowOnce)
    const commands = path.join(home, "config", "agent-loop", "commands")
    fs.mkdirSync(commands, { recursive: true })
    fs.writeFileSync(path.join(commands, "greet.md"), "---\ndescription: Greets someone\nargument-hint: NAME\n---\nSay hello to $ARGUMENTS, warmly.\n")
    const editor = open()
    await initialize(editor.agent)
    const { sessionId } = await editor.agent.request(acp.methods.agent.session.new, { cwd: path.join(home, "ws"), mcpServers: [] })
    const advertised = editor.updates.find((u) => u.update.sessionUpdate === "available_commands_update")?.update
    expect(advertised).toEqual({
      sessionUpdate: "available_commands_update",
      availableCommands: [{ name: "greet", description: "Greets someone", input: { hint: "NAME" } }]
    })
    const response = await editor.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "/greet Ann" }] })
    expect(response.stopReason).toBe("end_turn")
    const said = (server.requests[0]!.body.messages as Array<{ role: string; content: unknown }>).filter((m) => m.role === "user").map((m) => JSON.stringify(m.content))
    expect(said.join("\n")).toContain("Say hello to Ann, warmly.")
    await editor.close()
  })

  it("an editor that never answers a permission request: the approval timeout denies the call, the request is cancelled, the turn goes on and ends", async (context) => {
    const cancelled: Array<boolean> = []
    const { home, open, server } = await setup(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "echo ran > ran.txt" } }] },
      { text: "It was not allowed." }
    ], (_request, signal) => {
      // never answered, even once the agent cancels it (the SDK tells the handler through its signal)
      signal.addEventListener("abort", () => void cancelled.push(true))
      return new Promise<acp.RequestPermissionResponse>(() => undefined)
    }, { args: ["--approval-timeout", "1"] })
    const editor = open()
    await initialize(editor.agent)
    const workspace = path.join(home, "ws")
    const { sessionId } = await editor.agent.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] })
    const startedAt = Date.now()
    const response = await editor.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "run it" }] })
    expect(response.stopReason).toBe("end_turn")
    expect(editor.permissions).toHaveLength(1)
    expect(cancelled).toEqual([true])
    // denied at the timeout (1 s, and the hook runner's 5 s past it at most), not left hanging
    expect(Date.now() - startedAt).toBeLessThan(30_000)
    expect(fs.existsSync(path.join(workspace, "ran.txt"))).toBe(false)
    expect(server.requests).toHaveLength(2)
    expect(toolResults(server.requests[1]!).join("\n")).toMatch(/denied|not approved/i)
    expect(editor.updates.some((u) => u.update.sessionUpdate === "tool_call_update" && u.update.status === "failed")).toBe(true)
    await editor.close()
  })

  it("--client-terminal with an editor offering terminal/*: the approved command runs in the editor's terminal (shown in the tool call), its output is the result, the terminal is released; a timeout kills it", async (context) => {
    const log: Array<string> = []
    const { home, open, server } = await setup(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "echo in-the-editor > made.txt && echo shown" } }] },
      { toolCalls: [{ name: "exec", arguments: { command: "sleep 30", timeout_ms: 300 } }] },
      { text: "Done." }
    ], allowOnce, { args: ["--client-terminal"], handlers: scriptedTerminals(context, log) })
    const editor = open()
    await initialize(editor.agent, { terminal: true })
    const workspace = path.join(home, "ws")
    const real = fs.realpathSync(workspace)
    const { sessionId } = await editor.agent.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] })
    const response = await editor.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "run it there" }] })
    expect(response.stopReason).toBe("end_turn")
    // asked first, under the same rules
    expect(editor.permissions).toHaveLength(2)
    expect(log).toEqual([
      `create term-1: sh -c echo in-the-editor > made.txt && echo shown in ${real}`,
      "release term-1",
      `create term-2: sh -c sleep 30 in ${real}`,
      "kill term-2",
      "release term-2"
    ])
    expect(fs.readFileSync(path.join(workspace, "made.txt"), "utf8")).toBe("in-the-editor\n")
    const results = toolResults(server.requests[2]!)
    expect(results[0]).toBe("exit code: 0\nshown\n")
    expect(results[1]).toMatch(/timed out after 300 ms and was killed/)
    // the terminal is embedded in the tool call while it runs
    const about = editor.updates.flatMap((u) => "toolCallId" in u.update && u.update.toolCallId === "call_0_0" ? [u.update] : [])
    // the terminal is embedded in the tool call while it runs, after the call itself was shown
    expect(about.map((u) => u.sessionUpdate)).toEqual(["tool_call", "tool_call_update", "tool_call_update"])
    expect(about[1]).toMatchObject({ content: [{ type: "terminal", terminalId: "term-1" }] })
    await editor.close()
  })

  it("--client-terminal: cancel kills the command in the editor's terminal and the prompt answers cancelled", async (context) => {
    const log: Array<string> = []
    const never = gate()
    const { home, open } = await setup(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "sleep 60" } }] },
      { text: "never", hold: never.promise }
    ], allowOnce, { args: ["--client-terminal"], handlers: scriptedTerminals(context, log) })
    const editor = open()
    await initialize(editor.agent, { terminal: true })
    const { sessionId } = await editor.agent.request(acp.methods.agent.session.new, { cwd: path.join(home, "ws"), mcpServers: [] })
    const answered = editor.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "wait" }] })
    const deadline = Date.now() + 60_000
    while (!log.some((line) => line.startsWith("create"))) {
      if (Date.now() > deadline) throw new Error(`no terminal: ${editor.stderr()}`)
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    await editor.agent.notify(acp.methods.agent.session.cancel, { sessionId })
    expect((await answered).stopReason).toBe("cancelled")
    expect(log.slice(1)).toEqual(["kill term-1", "release term-1"])
    await editor.close()
  })

  it("an editor offering terminal/* without --client-terminal: commands run in the loop, the editor's terminal is never asked for", async (context) => {
    const log: Array<string> = []
    const { home, open, server } = await setup(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "echo local" } }] },
      { text: "Done." }
    ], allowOnce, { handlers: scriptedTerminals(context, log) })
    const editor = open()
    await initialize(editor.agent, { terminal: true })
    const { sessionId } = await editor.agent.request(acp.methods.agent.session.new, { cwd: path.join(home, "ws"), mcpServers: [] })
    const response = await editor.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "run it" }] })
    expect(response.stopReason).toBe("end_turn")
    expect(log).toEqual([])
    expect(toolResults(server.requests[1]!)[0]).toContain("local")
    await editor.close()
  })
})
