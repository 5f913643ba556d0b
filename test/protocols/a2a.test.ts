/**
 * `agent-loop serve` as an A2A agent, driven by the official A2A SDK's client (`@a2a-js/sdk`)
 * against the real command with a loopback model: the public card; a streamed message (submitted,
 * working, the answer as an artifact, completed); a context that goes on after a restart; a command that needs approval (input-required,
 * approved by a message on the task, completed; denied in another task; denied by the approval
 * timeout when nobody answers); a cancel mid-command
 * (canceled at once, the command's file never written, the stop in the session); steering a working
 * task; a typed answer as
 * a data part; an unknown task;
 * bad JSON-RPC, with the spec's error codes.
 */
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { Role, TaskState } from "@a2a-js/sdk"
import type { Message, Part, StreamResponse, Task } from "@a2a-js/sdk"
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from "@a2a-js/sdk/client"
import { TaskNotCancelableError, TaskNotFoundError } from "@a2a-js/sdk/errors"
import { describe, expect, it } from "vitest"
import { STOPPED_NOTE } from "../../src/programs/internal/turnEnd.ts"
import { cliSetup, spawnCli, type TestContext } from "../support/cliProcess.ts"
import { gate, type Script } from "../support/openaiServer.ts"
import { waitUntil } from "../support/waitUntil.ts"

const TOKEN = "a2a-test-token-0123456789abcdef"
const AGENT = /A2A agent at (http:\/\/127\.0\.0\.1:\d+)\/a2a/

/** `serve` on a free port with a known token, an A2A client connected to it through its card. */
const serve = async (context: TestContext, script: Script, flags: ReadonlyArray<string> = []) =>
  serveIn(context, await cliSetup(context, script, { flags }))

/** `serve` of a setup (its home, model and workspace), as `serve` does: again after a restart. */
const serveIn = async (context: TestContext, setup: Awaited<ReturnType<typeof cliSetup>>) => {
  const cli = spawnCli(["serve", ...setup.flags, "--port", "0"], { env: { ...setup.env, AGENT_LOOP_SERVER_TOKEN: TOKEN } })
  context.onTestFinished(async () => {
    cli.child.kill("SIGTERM")
    await cli.exited
  })
  await cli.waitFor(AGENT)
  const origin = AGENT.exec(cli.stderr())![1]!
  const withToken: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers)
    headers.set("authorization", `Bearer ${TOKEN}`)
    return fetch(input, { ...init, headers })
  }
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: withToken })]
  }))
  const client = await factory.createFromUrl(origin)
  return { ...setup, cli, origin, client }
}

const text = (value: string): Part => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "" })
const data = (value: unknown): Part => ({ content: { $case: "data", value }, metadata: undefined, filename: "", mediaType: "" })

const userMessage = (parts: Array<Part>, on: { readonly taskId?: string; readonly contextId?: string } = {}): Message => ({
  messageId: randomUUID(),
  contextId: on.contextId ?? "",
  taskId: on.taskId ?? "",
  role: Role.ROLE_USER,
  parts,
  metadata: undefined,
  extensions: [],
  referenceTaskIds: []
})

const send = (message: Message) => ({ tenant: "", message, configuration: undefined, metadata: undefined })

/** Every event of a stream, to its end. */
const drain = async (stream: AsyncIterable<StreamResponse>) => {
  const events: Array<StreamResponse["payload"]> = []
  for await (const event of stream) events.push(event.payload)
  return events
}

const states = (events: ReadonlyArray<StreamResponse["payload"]>) =>
  events.flatMap((event) => event?.$case === "statusUpdate" ? [event.value.status!.state] : event?.$case === "task" ? [event.value.status!.state] : [])

const partText = (part: Part | undefined) => part?.content?.$case === "text" ? part.content.value : undefined

/** A raw JSON-RPC call: the HTTP status and the parsed body. */
const rpc = async (origin: string, body: string, token = TOKEN, headers: Record<string, string> = {}) => {
  const response = await fetch(`${origin}/a2a`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers }, body })
  const raw = await response.text()
  return { status: response.status, body: raw === "" ? undefined : JSON.parse(raw) }
}

describe("agent-loop serve as an A2A agent", () => {
  it("a public card with the bearer scheme; a streamed message: submitted, working, the answer as an artifact, completed", async (context) => {
    const { origin, client } = await serve(context, [{ text: "Hello from the loop." }])
    const card = await (await fetch(`${origin}/.well-known/agent-card.json`)).json() as any
    expect(card.supportedInterfaces).toEqual([{ url: `${origin}/a2a`, protocolBinding: "JSONRPC", protocolVersion: "1.0" }])
    expect(card.capabilities).toMatchObject({ streaming: true, pushNotifications: false })
    expect(card.securitySchemes.bearer.httpAuthSecurityScheme.scheme).toBe("Bearer")
    expect(card.securityRequirements).toEqual([{ schemes: { bearer: { list: [] } } }])
    const proxied = await (await fetch(`${origin}/.well-known/agent-card.json`, { headers: { "x-forwarded-proto": "https", "x-forwarded-host": "agents.example.com" } })).json() as any
    expect(proxied.supportedInterfaces[0].url).toBe("https://agents.example.com/a2a")
    const fromClient = await client.getAgentCard()
    expect(fromClient.name).toBe("agent-loop")
    for (const token of ["", "wrong-token-0123456789abcdef"]) {
      const refused = await rpc(origin, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "x" } }), token)
      expect(refused).toEqual({ status: 401, body: undefined })
    }

    const events = await drain(client.sendMessageStream(send(userMessage([text("say hello")]))))
    expect(events[0]?.$case).toBe("task")
    expect(states(events)).toEqual([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED])
    const artifact = events.find((event) => event?.$case === "artifactUpdate")
    expect(artifact?.$case === "artifactUpdate" && partText(artifact.value.artifact!.parts[0])).toBe("Hello from the loop.")
    const first = events[0]!.value as Task
    const task = await client.getTask({ tenant: "", id: first.id, historyLength: undefined })
    expect(task.status!.state).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(task.contextId).toBe(first.contextId)
    expect(partText(task.artifacts[0]!.parts[0])).toBe("Hello from the loop.")
    expect(task.history.map((m) => [m.role, partText(m.parts[0])])).toEqual([[Role.ROLE_USER, "say hello"], [Role.ROLE_AGENT, "Hello from the loop."]])
    // the context is the loop's session: the API has its history
    const history = await (await fetch(`${origin}/v1/sessions/${task.contextId}`, { headers: { authorization: `Bearer ${TOKEN}` } })).json() as any
    expect(JSON.stringify(history.entries)).toContain("Hello from the loop.")
  })

  it("a context goes on after a restart: the next message on it is answered with the earlier exchange in the conversation", async (context) => {
    const setup = await cliSetup(context, [{ text: "The answer is 42." }, { text: "You asked about the answer." }])
    const before = await serveIn(context, setup)
    const contextId = `ctx-${randomUUID()}`
    expect(states(await drain(before.client.sendMessageStream(send(userMessage([text("what is the answer?")], { contextId }))))).at(-1))
      .toBe(TaskState.TASK_STATE_COMPLETED)
    before.cli.child.kill("SIGTERM")
    await before.cli.exited
    const after = await serveIn(context, setup)
    const events = await drain(after.client.sendMessageStream(send(userMessage([text("what did I ask?")], { contextId }))))
    expect(states(events).at(-1)).toBe(TaskState.TASK_STATE_COMPLETED)
    const asked = setup.server.requests[1]!.body.messages.filter((m: any) => m.role !== "system").map((m: any) => [m.role, m.content])
    expect(asked).toEqual([["user", "what is the answer?"], ["assistant", "The answer is 42."], ["user", "what did I ask?"]])
  })

  it("a command that needs approval: input-required, approved by a message on the task, completed; denied in another task", async (context) => {
    const { client, workspace, origin, server } = await serve(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "echo approved > approved.txt" } }] },
      { text: "Wrote it." },
      { toolCalls: [{ name: "exec", arguments: { command: "echo denied > denied.txt" } }] },
      { text: "Did not write it." }
    ])
    const asked = await drain(client.sendMessageStream(send(userMessage([text("write the file")]))))
    expect(states(asked).at(-1)).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
    const waiting = asked.at(-1)
    const status = waiting?.$case === "statusUpdate" ? waiting.value.status! : undefined
    expect(partText(status?.message?.parts[0])).toContain("exec needs approval")
    const request = status?.message?.parts[1]?.content
    expect(request?.$case === "data" && request.value.approval).toMatchObject({ toolName: "exec", arguments: { command: "echo approved > approved.txt" } })
    const { id: taskId, contextId } = asked[0]!.value as Task
    expect(fs.existsSync(path.join(workspace, "approved.txt"))).toBe(false)
    // the same approval is the API's: one decision, through either door
    const pending = await (await fetch(`${origin}/v1/approvals`, { headers: { authorization: `Bearer ${TOKEN}` } })).json() as Array<any>
    expect(pending.filter((a) => a.status === "pending").map((a) => a.sessionKey)).toEqual([contextId])

    const approved = await drain(client.sendMessageStream(send(userMessage([text("approve")], { taskId, contextId }))))
    expect(states(approved).at(-1)).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(states(approved)).not.toContain(TaskState.TASK_STATE_INPUT_REQUIRED)
    expect(fs.readFileSync(path.join(workspace, "approved.txt"), "utf8")).toBe("approved\n")
    const done = await client.getTask({ tenant: "", id: taskId, historyLength: undefined })
    expect(partText(done.artifacts[0]!.parts[0])).toBe("Wrote it.")
    // a message on an ended task is refused
    await expect(client.sendMessage(send(userMessage([text("approve")], { taskId })))).rejects.toMatchObject({ envelopeCode: -32004 })

    // a blocking send in the same context: it answers at input-required; a deny with a reason (a data part)
    const second = await client.sendMessage(send(userMessage([text("write another")], { contextId })))
    const secondTask = second as Task
    expect(secondTask.status!.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
    expect(secondTask.contextId).toBe(contextId)
    const denied = await client.sendMessage(send(userMessage([data({ decision: "deny", reason: "not this one" })], { taskId: secondTask.id }))) as Task
    expect(denied.status!.state).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(partText(denied.artifacts[0]!.parts[0])).toBe("Did not write it.")
    expect(fs.existsSync(path.join(workspace, "denied.txt"))).toBe(false)
    expect(JSON.stringify(server.requests[3]!.body.messages)).toContain("not this one")
  })

  it("an approval nobody answers: the loop's approval timeout denies the call, the task goes on to its answer", async (context) => {
    const { client, workspace, server } = await serve(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "echo late > late.txt" } }] },
      { text: "Nobody said yes." }
    ], ["--approval-timeout", "1"])
    const asked = await client.sendMessage(send(userMessage([text("write it")]))) as Task
    expect(asked.status!.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
    let task = asked
    await waitUntil("the task to end", async () => {
      task = await client.getTask({ tenant: "", id: asked.id, historyLength: undefined })
      return task.status!.state === TaskState.TASK_STATE_COMPLETED
    })
    expect(partText(task.artifacts[0]!.parts[0])).toBe("Nobody said yes.")
    expect(fs.existsSync(path.join(workspace, "late.txt"))).toBe(false)
    expect(JSON.stringify(server.requests[1]!.body.messages)).toMatch(/denied/i)
  })

  it("cancel mid-command: canceled at once, the command's file never written, the stop recorded in the session", async (context) => {
    const never = gate()
    const { client, workspace, origin, server } = await serve(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "sleep 60 && echo late > late.txt" } }] },
      { text: "never", hold: never.promise }
    ])
    const asked = await drain(client.sendMessageStream(send(userMessage([text("run it")]))))
    const { id: taskId, contextId } = asked[0]!.value as Task
    expect(states(asked).at(-1)).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
    const seen: Array<StreamResponse["payload"]> = []
    const following = (async () => {
      for await (const event of client.sendMessageStream(send(userMessage([data({ decision: "approve" })], { taskId, contextId })))) seen.push(event.payload)
    })()
    await waitUntil("the command to start", () =>
      seen.some((event) => event?.$case === "statusUpdate" && partText(event.value.status?.message?.parts[0]) === "running exec"))
    // another client follows the same task, working now
    const watched: Array<StreamResponse["payload"]> = []
    const watching = (async () => {
      for await (const event of client.resubscribeTask({ tenant: "", id: taskId })) watched.push(event.payload)
    })()
    await waitUntil("the second client to follow", () => watched.length > 0)
    expect(states(watched)).toEqual([TaskState.TASK_STATE_WORKING])
    const cancelledAt = Date.now()
    const canceled = await client.cancelTask({ tenant: "", id: taskId, metadata: undefined })
    expect(canceled.status!.state).toBe(TaskState.TASK_STATE_CANCELED)
    expect(Date.now() - cancelledAt).toBeLessThan(10_000)
    await following
    await watching
    expect(states(seen).at(-1)).toBe(TaskState.TASK_STATE_CANCELED)
    expect(states(watched).at(-1)).toBe(TaskState.TASK_STATE_CANCELED)
    expect(fs.existsSync(path.join(workspace, "late.txt"))).toBe(false)
    expect(server.requests).toHaveLength(1)
    await expect(client.cancelTask({ tenant: "", id: taskId, metadata: undefined })).rejects.toBeInstanceOf(TaskNotCancelableError)
    const history = await (await fetch(`${origin}/v1/sessions/${contextId}`, { headers: { authorization: `Bearer ${TOKEN}` } })).json() as any
    expect(JSON.stringify(history.entries)).toContain(STOPPED_NOTE)
  })

  it("a message on a working task steers its turn: the model sees it, the task completes with the last answer", async (context) => {
    const { client, server } = await serve(context, [
      { toolCalls: [{ name: "exec", arguments: { command: "sleep 2" } }] },
      { text: "Steered." }
    ])
    const asked = await drain(client.sendMessageStream(send(userMessage([text("wait a bit")]))))
    const { id: taskId, contextId } = asked[0]!.value as Task
    const seen: Array<StreamResponse["payload"]> = []
    const following = (async () => {
      for await (const event of client.sendMessageStream(send(userMessage([text("approve")], { taskId, contextId })))) seen.push(event.payload)
    })()
    await waitUntil("the command to start", () =>
      seen.some((event) => event?.$case === "statusUpdate" && partText(event.value.status?.message?.parts[0]) === "running exec"))
    // joined to the turn's next model call, or run right after the turn (as the same task): never dropped
    const done = await client.sendMessage(send(userMessage([text("mind the weather")], { taskId }))) as Task
    await following
    expect(done.status!.state).toBe(TaskState.TASK_STATE_COMPLETED)
    expect(partText(done.artifacts.at(-1)!.parts[0])).toBe("Steered.")
    expect(server.requests.some((request) => JSON.stringify(request.body.messages).includes("mind the weather"))).toBe(true)
    expect(done.history.map((m) => partText(m.parts[0]))).toContain("mind the weather")
  })

  it("a typed answer: metadata.outputSchema asks for one, the artifact carries it as a data part; a bad schema is refused", async (context) => {
    const { client, server } = await serve(context, [{ text: '{"greeting": "hello", "count": 2}' }])
    const schema = { type: "object", properties: { greeting: { type: "string" }, count: { type: "integer" } }, required: ["greeting", "count"] }
    const task = await client.sendMessage(send({ ...userMessage([text("greet twice")]), metadata: { outputSchema: schema } })) as Task
    expect(task.status!.state).toBe(TaskState.TASK_STATE_COMPLETED)
    const [answer, typed] = task.artifacts[0]!.parts
    expect(partText(answer)).toBe('{"greeting": "hello", "count": 2}')
    expect(typed?.content).toEqual({ $case: "data", value: { greeting: "hello", count: 2 } })
    expect(JSON.stringify(server.requests[0]!.body)).toContain("greeting")
    await expect(client.sendMessage(send({ ...userMessage([text("greet")]), metadata: { outputSchema: "not a schema" } }))).rejects.toMatchObject({ envelopeCode: -32602 })
  })

  it("an unknown task, and bad JSON-RPC: the spec's error codes", async (context) => {
    const { client, origin } = await serve(context, [{ text: "unused" }])
    await expect(client.getTask({ tenant: "", id: "no-such-task", historyLength: undefined })).rejects.toBeInstanceOf(TaskNotFoundError)
    await expect(client.cancelTask({ tenant: "", id: "no-such-task", metadata: undefined })).rejects.toMatchObject({ envelopeCode: -32001 })
    await expect(client.sendMessage(send(userMessage([text("hi")], { taskId: "no-such-task" })))).rejects.toMatchObject({ envelopeCode: -32001 })
    const error = async (body: string, headers: Record<string, string> = {}) => {
      const answer = await rpc(origin, body, TOKEN, headers)
      expect(answer.status).toBe(200)
      return { id: answer.body.id, code: answer.body.error?.code }
    }
    expect(await error("{ not json")).toEqual({ id: null, code: -32700 })
    expect(await error(JSON.stringify({ jsonrpc: "1.0", id: 7, method: "GetTask" }))).toEqual({ id: 7, code: -32600 })
    expect(await error(JSON.stringify({ jsonrpc: "2.0", id: 8 }))).toEqual({ id: 8, code: -32600 })
    expect(await error(JSON.stringify({ jsonrpc: "2.0", id: 9, method: "NoSuchMethod", params: {} }))).toEqual({ id: 9, code: -32601 })
    expect(await error(JSON.stringify({ jsonrpc: "2.0", id: 10, method: "SendMessage", params: {} }))).toEqual({ id: 10, code: -32602 })
    expect(await error(JSON.stringify({ jsonrpc: "2.0", id: 11, method: "SendMessage", params: { message: { messageId: "m", role: "ROLE_USER", parts: [] } } })))
      .toEqual({ id: 11, code: -32602 })
    expect(await error(JSON.stringify({ jsonrpc: "2.0", id: "a", method: "CreateTaskPushNotificationConfig", params: {} }))).toEqual({ id: "a", code: -32003 })
    expect(await error(JSON.stringify({ jsonrpc: "2.0", id: 12, method: "GetTask", params: { id: "x" } }), { "A2A-Version": "0.3" })).toEqual({ id: 12, code: -32009 })
    // the endpoint still answers
    const task = await client.sendMessage(send(userMessage([text("still there?")]))) as Task
    expect(task.status!.state).toBe(TaskState.TASK_STATE_COMPLETED)
  })
})
