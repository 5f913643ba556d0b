/**
 * Sampling and reasoning flags and `--provider openai-responses`, end to end: the real launcher
 * against loopback servers speaking Chat Completions and the Responses API.
 */
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { isolatedEnv, runCli, tempDir, type TestContext } from "../support/cliProcess.ts"
import { start } from "../support/openaiServer.ts"

const sse = (type: string, fields: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`

/** A Responses API server answering every request with one short text; it keeps what it received. */
const responsesServer = async (context: TestContext) => {
  const received: Array<{ readonly path: string; readonly body: any }> = []
  const server = http.createServer((req, res) => {
    const parts: Array<Buffer> = []
    req.on("data", (b: Buffer) => parts.push(b))
    req.on("end", () => {
      received.push({ path: req.url ?? "", body: JSON.parse(Buffer.concat(parts).toString("utf8")) })
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.end([
        sse("response.reasoning_summary_text.delta", { delta: "Thinking it over." }),
        sse("response.output_text.delta", { delta: "Hello from Responses." }),
        sse("response.completed", {
          response: { status: "completed", usage: { input_tokens: 30, output_tokens: 12, output_tokens_details: { reasoning_tokens: 8 } } }
        })
      ].join(""))
    })
  })
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", () => ok()))
  context.onTestFinished(() => new Promise<void>((ok) => server.close(() => ok())))
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`, received }
}

describe.concurrent("model options on the command line", () => {
  it("flags over the settings' modelOptions reach the request; a bad value fails with one line and sends nothing", async (context) => {
    const server = await start([{ text: "ok" }])
    context.onTestFinished(() => server.close())
    const home = tempDir()
    const env = isolatedEnv(home)
    fs.mkdirSync(path.join(home, "config", "agent-loop"), { recursive: true })
    fs.writeFileSync(
      path.join(home, "config", "agent-loop", "settings.json"),
      JSON.stringify({ modelOptions: { temperature: 0.2, topP: 0.8, reasoning: { effort: "low" } } })
    )
    const flags = ["--base-url", server.url, "--model", "m", "--workspace", home, "--ephemeral", "--no-context-files"]
    const ok = await runCli(["run", ...flags, "--temperature", "0.6", "--stop", "END", "--seed", "11", "--max-tokens", "300", "hi"], { env })
    expect(ok.code).toBe(0)
    expect(server.requests[0]!.body).toMatchObject({
      temperature: 0.6,
      top_p: 0.8,
      stop: ["END"],
      seed: 11,
      max_tokens: 300,
      reasoning_effort: "low"
    })
    const bad = await runCli(["run", ...flags, "--temperature", "9", "hi"], { env })
    expect(bad.code).toBe(1)
    expect(bad.stderr.trim()).toBe("agent-loop: --temperature: Expected a value between 0 and 2")
    const effort = await runCli(["run", ...flags, "--reasoning-effort", "extreme", "hi"], { env })
    expect(effort.code).toBe(1)
    // a value outside a choice is refused by the flag parser, as for every choice flag
    expect(effort.stderr).toContain("Invalid value for flag --reasoning-effort: \"extreme\"")
    expect(server.requests).toHaveLength(1)
  })

  it("--provider openai-responses talks to /responses with OpenAI's key, instructions and the reasoning options", async (context) => {
    const server = await responsesServer(context)
    const home = tempDir()
    const key = "sk-responses-cli-0123456789"
    const result = await runCli([
      "run",
      "--provider",
      "openai-responses",
      "--base-url",
      server.url,
      "--model",
      "gpt-5",
      "--workspace",
      home,
      "--ephemeral",
      "--no-context-files",
      "--system",
      "Be terse.",
      "--reasoning-effort",
      "medium",
      "--max-tokens",
      "500",
      "hi"
    ], { env: isolatedEnv(home, { OPENAI_API_KEY: key }) })
    expect(result.code).toBe(0)
    expect(result.stdout).toContain("Hello from Responses.")
    expect(result.stderr).toMatch(/30 in · 12 out \(8 reasoning\) tokens/)
    const sent = server.received[0]!
    expect(sent.path).toBe("/v1/responses")
    expect(sent.body).toMatchObject({
      model: "gpt-5",
      instructions: "Be terse.",
      input: [{ role: "user", content: [{ type: "input_text", text: "hi" }] }],
      store: false,
      max_output_tokens: 500,
      reasoning: { effort: "medium", summary: "auto" },
      include: ["reasoning.encrypted_content"]
    })
    expect(JSON.stringify(sent.body)).not.toContain(key)
  })
})
