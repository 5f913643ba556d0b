/**
 * `useChat` from `@ai-sdk/react` against the real `agent-loop serve`, in headless Chromium: a tiny
 * React page, built with esbuild in the test and served from another origin on 127.0.0.1 (the
 * server allows it with `--cors-origin`), posts the prompt to `POST /v1/chat` with the bearer
 * token. A loopback OpenAI-compatible model reasons, says something and calls `exec`; the page
 * shows the streamed reasoning and text and the call waiting for approval; the test clicks
 * "approve", and the page shows the command's output and the model's final answer, with no
 * parsing of its own. Skipped, saying so, where Chromium is not installed.
 */
import * as fs from "node:fs"
import * as http from "node:http"
import type * as net from "node:net"
import * as path from "node:path"
import * as esbuild from "esbuild"
import type { Browser } from "playwright-core"
import { chromiumPresent, launchChromium } from "../support/chromium.ts"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { cliSetup, root, spawnCli, tempDir } from "../support/cliProcess.ts"
import type { Reply } from "../support/openaiServer.ts"
import { waitUntil } from "../support/waitUntil.ts"

const present = chromiumPresent("useChat browser test")

/** Deadline of every wait for the page: generous, since the machine may be busy. */
const WAIT = { timeout: 60_000 }

const TOKEN = "chat-browser-token-0123456789abcdef"

/** The page: `useChat` as its documentation shows it, tool parts rendered with approve and deny buttons. */
const PAGE = `
import { useChat } from "@ai-sdk/react"
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai"
import { useState } from "react"
import { createRoot } from "react-dom/client"

const { api, token } = window.CHAT

function Part({ part, answer }) {
  if (part.type === "text") return <p className="text">{part.text}</p>
  if (part.type === "reasoning") return <p className="reasoning">{part.text}</p>
  if (part.type !== "dynamic-tool") return null
  return (
    <div className="tool" data-state={part.state}>
      <b className="name">{part.toolName}</b> <code className="input">{JSON.stringify(part.input)}</code>
      {part.state === "approval-requested" && (
        <span>
          <button className="approve" onClick={() => answer({ id: part.approval.id, approved: true })}>approve</button>
          <button className="deny" onClick={() => answer({ id: part.approval.id, approved: false })}>deny</button>
        </span>
      )}
      {part.state === "output-available" && <pre className="output">{String(part.output)}</pre>}
      {part.state === "output-error" && <pre className="output">{part.errorText}</pre>}
      {part.state === "output-denied" && <pre className="output">denied</pre>}
    </div>
  )
}

function App() {
  const [input, setInput] = useState("")
  const { messages, sendMessage, addToolApprovalResponse, status, error } = useChat({
    id: "browser-chat",
    transport: new DefaultChatTransport({ api: api + "/v1/chat", headers: { Authorization: "Bearer " + token } }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses
  })
  return (
    <main>
      <div id="status">{status}</div>
      {error && <div id="error">{error.message}</div>}
      {messages.map((message) => (
        <div key={message.id} className={"message " + message.role}>
          {message.parts.map((part, i) => <Part key={i} part={part} answer={addToolApprovalResponse} />)}
        </div>
      ))}
      <form onSubmit={(e) => { e.preventDefault(); sendMessage({ text: input }); setInput("") }}>
        <input id="prompt" value={input} onChange={(e) => setInput(e.target.value)} />
        <button id="send" type="submit">send</button>
      </form>
    </main>
  )
}

createRoot(document.getElementById("root")).render(<App />)
`

/** The model: reasons, says it will run the command and calls exec; after the tool's result, answers with it. */
const model = (request: { body: any }): Reply => {
  const last = request.body.messages.at(-1)
  if (last.role === "tool") return { text: ["The command printed: ", String(last.content).includes("hello-from-exec") ? "hello-from-exec" : "something else"] }
  return {
    reasoning: "The user wants the greeting printed; exec can do it.",
    text: ["I will ", "run it."],
    toolCalls: [{ id: "call_exec", name: "exec", arguments: { command: "echo hello-from-exec" } }]
  }
}

let browser: Browser
let page: { origin: string; close: () => Promise<void> }
let dir: string

/** Builds the page with esbuild into a temporary directory and serves it on 127.0.0.1. */
const servePage = async (api: () => string) => {
  dir = tempDir()
  await esbuild.build({
    stdin: { contents: PAGE, loader: "jsx", resolveDir: root, sourcefile: "page.jsx" },
    bundle: true,
    format: "esm",
    jsx: "automatic",
    outfile: path.join(dir, "app.js"),
    define: { "process.env.NODE_ENV": "\"production\"" },
    logLevel: "silent"
  })
  const server = http.createServer((request, response) => {
    if (request.url === "/app.js") {
      response.writeHead(200, { "content-type": "text/javascript" })
      return response.end(fs.readFileSync(path.join(dir, "app.js")))
    }
    response.writeHead(200, { "content-type": "text/html" })
    response.end(
      `<!doctype html><title>chat</title><div id="root"></div>` +
        `<script>window.CHAT = ${JSON.stringify({ api: api(), token: TOKEN })}</script><script type="module" src="/app.js"></script>`
    )
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    origin: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

describe.skipIf(!present)("useChat in Chromium against agent-loop serve", { timeout: 180_000 }, () => {
  let api = ""

  beforeAll(async () => {
    page = await servePage(() => api)
    browser = await launchChromium()
  }, 120_000)

  afterAll(async () => {
    await browser?.close()
    await page?.close()
    if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true })
  })

  it("streams the reasoning, the text and the tool call, waits for approve, then shows the output and the answer", async (context) => {
    const { flags, env, server, workspace } = await cliSetup(context, model)
    const cli = spawnCli(["serve", ...flags, "--port", "0", "--cors-origin", page.origin], { env: { ...env, AGENT_LOOP_SERVER_TOKEN: TOKEN } })
    try {
      await waitUntil("serve to listen", () => /API at (http:\/\/127\.0\.0\.1:\d+)\/v1/.test(cli.stderr() + cli.stdout()))
      api = /API at (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(cli.stderr() + cli.stdout())![1]!
      const browserContext = await browser.newContext()
      const tab = await browserContext.newPage()
      const errors: Array<string> = []
      tab.on("pageerror", (error) => errors.push(error.message))
      const authorizations: Array<string | undefined> = []
      tab.on("request", (request) => {
        if (request.url().endsWith("/v1/chat") && request.method() === "POST") authorizations.push(request.headers()["authorization"])
      })
      try {
        await tab.goto(page.origin)
        await tab.fill("#prompt", "Print a greeting with a command")
        await tab.click("#send")

        const waiting = tab.locator('.message.assistant .tool[data-state="approval-requested"]')
        await waiting.waitFor(WAIT)
        expect(await tab.locator(".message.user .text").textContent()).toBe("Print a greeting with a command")
        expect(await tab.locator(".message.assistant .reasoning").textContent()).toBe("The user wants the greeting printed; exec can do it.")
        expect(await tab.locator(".message.assistant .text").first().textContent()).toBe("I will run it.")
        expect(await waiting.locator(".name").textContent()).toBe("exec")
        expect(JSON.parse((await waiting.locator(".input").textContent())!)).toMatchObject({ command: "echo hello-from-exec" })
        await tab.locator("#status:text('ready')").waitFor(WAIT)
        // nothing ran before the decision: the model was asked once
        expect(server.requests.length).toBe(1)

        await waiting.locator(".approve").click()
        const done = tab.locator('.message.assistant .tool[data-state="output-available"]')
        await done.waitFor(WAIT)
        expect(await done.locator(".output").textContent()).toContain("hello-from-exec")
        await tab.locator(".message.assistant .text:text('The command printed: hello-from-exec')").waitFor(WAIT)
        await tab.locator("#status:text('ready')").waitFor(WAIT)
        // one assistant message holds the whole turn, in order: reasoning, text, the call, the answer
        expect(await tab.locator(".message.assistant").count()).toBe(1)
        const order = await tab.locator(".message.assistant > *").evaluateAll((nodes) => nodes.map((n) => n.className))
        expect(order).toEqual(["reasoning", "text", "tool", "text"])
        expect(await tab.locator("#error").count()).toBe(0)
        expect(errors).toEqual([])
        expect(authorizations.length).toBe(2)
        for (const authorization of authorizations) expect(authorization).toBe(`Bearer ${TOKEN}`)
        // the model read the command's output
        expect(server.requests.length).toBe(2)
        expect(JSON.stringify(server.requests[1]!.body.messages.at(-1))).toContain("hello-from-exec")
        expect(fs.existsSync(workspace)).toBe(true)
      } finally {
        await browserContext.close()
      }
    } finally {
      cli.child.kill("SIGTERM")
      await cli.exited
    }
  })
})
