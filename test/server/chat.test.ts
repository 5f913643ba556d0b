/**
 * `POST /v1/chat`, the AI SDK's UI message stream, read over real HTTP by the AI SDK's own client
 * parts: `DefaultChatTransport` posts what `useChat` posts and checks every chunk against the
 * SDK's chunk schema, `readUIMessageStream` builds the message as `useChat` would. A turn streams
 * its text; a call that needs approval ends the stream with a `tool-approval-request`, and the
 * assistant's message with the answer continues it (the tool's output, the final text) or shows
 * the denial, once no other call of the batch still runs; the chat's message while a turn runs, a regenerate and an unknown approval are refused.
 */
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses, readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, type ServerFixture, startServer } from "../support/server.ts"
import { waitUntil } from "../support/waitUntil.ts"

let f: ServerFixture

beforeAll(async () => {
  f = await startServer()
})

afterAll(() => f?.close())

const transport = () => new DefaultChatTransport<UIMessage>({ api: `${f.origin}/v1/chat`, headers: { authorization: `Bearer ${f.token}` } })

const user = (text: string): UIMessage => ({ id: `u-${text}`, role: "user", parts: [{ type: "text", text }] })

/** Posts the messages as `useChat` does; the chunks (each checked by the SDK's schema) and the message they build. */
const send = async (chatId: string, messages: Array<UIMessage>, continued?: UIMessage) => {
  const stream = await transport().sendMessages({
    chatId,
    messages,
    trigger: "submit-message",
    messageId: continued?.id,
    abortSignal: AbortSignal.timeout(30_000)
  })
  const chunks: Array<UIMessageChunk> = []
  for await (const chunk of stream as unknown as AsyncIterable<UIMessageChunk>) chunks.push(chunk)
  let message: UIMessage | undefined
  const replay = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk)
      controller.close()
    }
  })
  const errors: Array<unknown> = []
  for await (const snapshot of readUIMessageStream({ stream: replay, ...(continued === undefined ? {} : { message: continued }), onError: (e) => errors.push(e) })) {
    message = snapshot
  }
  expect(errors).toEqual([])
  return { chunks, types: chunks.map((c) => c.type), message: message! }
}

/** The message with the page's answer to its approval, as `addToolApprovalResponse` leaves it. */
const answer = (message: UIMessage, approved: boolean, reason?: string): UIMessage => ({
  ...message,
  parts: message.parts.map((part: any) =>
    part.state === "approval-requested" ? { ...part, state: "approval-responded", approval: { ...part.approval, approved, ...(reason === undefined ? {} : { reason }) } } : part)
})

describe("the AI SDK's UI message stream (POST /v1/chat)", () => {
  it("streams a turn's text as the SDK's chunks, with its headers, and ends with [DONE]", async () => {
    const response = await call(f, "POST", "/v1/chat", { id: "chat-text", messages: [user("hello there")], trigger: "submit-message" })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toContain("text/event-stream")
    expect(response.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1")
    const body = await response.text()
    expect(body.trimEnd().endsWith("data: [DONE]")).toBe(true)
    const { types, message, chunks } = await send("chat-text-2", [user("hello again")])
    expect(types[0]).toBe("start")
    expect(types).toEqual(expect.arrayContaining(["start-step", "text-start", "text-delta", "text-end", "finish-step"]))
    expect(chunks.at(-1)).toMatchObject({ type: "finish", finishReason: "stop", messageMetadata: { status: "completed" } })
    expect(message.role).toBe("assistant")
    expect(message.parts.filter((p) => p.type === "text").map((p: any) => p.text).join("")).toBe("You said: hello again")
  })

  it("a tool call runs as a dynamic tool part with its input and output", async () => {
    const { message } = await send("chat-echo", [user("echo this")])
    const tool = message.parts.find((p) => p.type === "dynamic-tool") as any
    expect(tool).toMatchObject({ toolName: "echo", toolCallId: "call-echo", state: "output-available", input: { text: "echo this" }, output: "echo this" })
    expect(message.parts.filter((p) => p.type === "text").map((p: any) => p.text).join("")).toBe("finished after echo: echo this")
  })

  it("a call that needs approval ends the stream with the request; the answered message continues the turn", async () => {
    const first = await send("chat-approve", [user("danger: drop the table")])
    expect(first.chunks.at(-1)).toMatchObject({ type: "finish", finishReason: "tool-calls" })
    const request = first.chunks.find((c) => c.type === "tool-approval-request") as any
    expect(request).toMatchObject({ toolCallId: "call-danger" })
    const tool = first.message.parts.find((p) => p.type === "dynamic-tool") as any
    expect(tool).toMatchObject({ toolName: "danger", state: "approval-requested", input: { what: "danger: drop the table" }, approval: { id: request.approvalId } })
    // the same approval the rest of the API sees
    const listed = await (await call(f, "GET", "/v1/approvals")).json() as Array<any>
    expect(listed.find((a) => a.id === request.approvalId)).toMatchObject({ status: "pending", sessionKey: "chat-approve" })
    expect(f.dangerRuns()).toBe(0)

    const answered = answer(first.message, true)
    expect(lastAssistantMessageIsCompleteWithApprovalResponses({ messages: [user("danger: drop the table"), answered] })).toBe(true)
    const second = await send("chat-approve", [user("danger: drop the table"), answered], answered)
    expect(second.types[0]).toBe("start")
    expect(second.chunks.at(-1)).toMatchObject({ type: "finish", finishReason: "stop" })
    expect(f.dangerRuns()).toBe(1)
    const done = second.message.parts.find((p) => p.type === "dynamic-tool") as any
    expect(done).toMatchObject({ toolCallId: "call-danger", state: "output-available", output: "done the dangerous thing" })
    expect(second.message.id).toBe(first.message.id)
    // the text of the first stream is not sent again: one text part, after the tool
    expect(second.message.parts.filter((p) => p.type === "text").map((p: any) => p.text)).toEqual(["finished after danger: done the dangerous thing"])
    const decided = await (await call(f, "GET", "/v1/approvals")).json() as Array<any>
    expect(decided.find((a) => a.id === request.approvalId)).toMatchObject({ status: "allow" })
  })

  it("a denied call ends denied, the tool never runs, and the model reads the reason", async () => {
    const runs = f.dangerRuns()
    const first = await send("chat-deny", [user("danger: wipe it")])
    const answered = answer(first.message, false, "not today")
    const second = await send("chat-deny", [user("danger: wipe it"), answered], answered)
    expect(second.types).toContain("tool-output-denied")
    expect((second.message.parts.find((p) => p.type === "dynamic-tool") as any).state).toBe("output-denied")
    expect(second.message.parts.filter((p) => p.type === "text").map((p: any) => p.text).join("")).toContain("not today")
    expect(f.dangerRuns()).toBe(runs)
  })

  it("a stream that reaches an approval while another call of the batch runs ends only once that call has ended", async () => {
    // gate and peek are read-only: they run side by side; peek waits for approval, gate for the test
    const streamed = send("chat-both", [user("both at once")])
    await waitUntil("peek's approval", async () =>
      ((await (await call(f, "GET", "/v1/approvals")).json()) as Array<any>).some((a) => a.sessionKey === "chat-both" && a.status === "pending"))
    await f.openGate()
    const first = await streamed
    const at = (type: string, toolCallId?: string) => first.chunks.findIndex((c: any) => c.type === type && (toolCallId === undefined || c.toolCallId === toolCallId))
    expect(at("tool-approval-request", "call-peek")).toBeGreaterThan(-1)
    expect(at("tool-output-available", "call-gate")).toBeGreaterThan(-1)
    expect(at("finish")).toBeGreaterThan(at("tool-output-available", "call-gate"))
    const answered = answer(first.message, true)
    expect(lastAssistantMessageIsCompleteWithApprovalResponses({ messages: [user("both at once"), answered] })).toBe(true)
    const second = await send("chat-both", [user("both at once"), answered], answered)
    expect(second.message.parts.filter((p) => p.type === "dynamic-tool").map((p: any) => [p.toolName, p.state, p.output])).toEqual([
      ["gate", "output-available", "the gate opened"],
      ["peek", "output-available", "peeked"]
    ])
  })

  it("refuses a message while the session runs a turn, a regenerate, an unknown approval, and a body that is not a chat", async () => {
    const started = await call(f, "POST", "/v1/sessions/chat-busy/turns", { message: "wait for the gate" })
    const { turnId } = await started.json() as { turnId: string }
    const busy = await call(f, "POST", "/v1/chat", { id: "chat-busy", messages: [user("hello")] })
    expect(busy.status).toBe(409)
    expect(await busy.json()).toMatchObject({ _tag: "SessionBusy", sessionKey: "chat-busy" })
    await f.openGate()
    await waitUntil("the gated turn to end", async () => ((await (await call(f, "GET", `/v1/turns/${turnId}`)).json()) as any).status === "done")

    const regenerate = await call(f, "POST", "/v1/chat", { id: "chat-busy", messages: [user("hello")], trigger: "regenerate-message" })
    expect(regenerate.status).toBe(400)
    expect(await regenerate.json()).toMatchObject({ _tag: "ChatRefused" })
    const unknown = await call(f, "POST", "/v1/chat", {
      id: "chat-busy",
      messages: [{ id: "a1", role: "assistant", parts: [{ type: "dynamic-tool", toolName: "danger", toolCallId: "x", state: "approval-responded", approval: { id: "no-such-approval", approved: true } }] }]
    })
    expect(unknown.status).toBe(404)
    const notChat = await call(f, "POST", "/v1/chat", { id: "chat-busy" })
    expect(notChat.status).toBe(400)
    expect(JSON.stringify(await notChat.json())).toContain("messages")
    expect((await call(f, "POST", "/v1/chat", { id: "chat-busy", messages: [user("hi")] }, {})).status).toBe(401)
  })
})
