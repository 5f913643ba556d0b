/**
 * The cloud providers through the real CLI, against loopback servers speaking their wire: Azure
 * OpenAI's deployment URLs and `api-key` header, the named OpenAI-compatible clouds (their key
 * variables, prices and headers) and the local servers (no key sent), each driving a whole turn —
 * tool call, tool result, final answer, usage and cost; the lines a missing key or URL gives;
 * `models --provider`; and `--provider` help naming every provider.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { providers } from "../../src/cli/providers/providers.ts"
import { cliSetup, isolatedEnv, runCli, tempDir, type TestContext } from "../support/cliProcess.ts"
import type { Reply, Script } from "../support/openaiServer.ts"
import { exceptionFrame, signatureValid, startBedrock, textReply, toolReply } from "../support/bedrockStream.ts"

/** A server, a workspace with notes.md, and an isolated environment with `extra`. */
const setup = async (context: TestContext, script: Script, extra: Record<string, string> = {}) => {
  const { server, home, workspace, env } = await cliSetup(context, script, { notes: "the launch is on Tuesday\n", env: extra })
  return { server, home, workspace, env, root: server.url.replace(/\/v1$/, "") }
}

/** The turn every test drives: read notes.md, then answer from it. */
const turn: ReadonlyArray<Reply> = [
  { toolCalls: [{ name: "read_file", arguments: { path: "notes.md" } }], usage: { prompt: 1000, completion: 40 } },
  { text: "Tuesday.", usage: { prompt: 1100, completion: 10 } }
]

const lastLine = (text: string) => text.trimEnd().split("\n").at(-1) ?? ""

/** The tool result the second request carried. */
const toolResult = (body: any) => body.messages.find((m: any) => m.role === "tool")?.content

describe.concurrent("Azure OpenAI through the CLI", () => {
  it("a whole turn on a deployment URL with the api-key header: tool call, result, answer, usage and cost", async (context) => {
    const KEY = "azure-cli-key-0123456789"
    const expected = "/openai/deployments/gpt-4.1-mini/chat/completions?api-version=2024-10-21"
    const { server, workspace, env, root } = await setup(context, (request, index) =>
      request.url !== expected
        ? { status: 404, error: `no deployment at ${request.url}` }
        : request.headers["api-key"] !== KEY
        ? { status: 401, error: "Access denied due to invalid subscription key" }
        : turn[index]!, { AZURE_OPENAI_API_KEY: KEY, OPENAI_API_VERSION: "2024-10-21" })
    const result = await runCli(
      ["run", "--provider", "azure", "--base-url", root, "--api-key-env", "AZURE_OPENAI_API_KEY", "--model", "gpt-4.1-mini", "--workspace", workspace, "--ephemeral", "When is the launch?"],
      { env }
    )
    expect(result.stderr).not.toContain("not in the built-in registry")
    expect(result.code).toBe(0)
    expect(result.stdout).toBe("Tuesday.\n")
    expect(server.requests.map((r) => r.url)).toEqual([expected, expected])
    expect(toolResult(server.requests[1]!.body)).toContain("the launch is on Tuesday")
    // 2100 × $0.40/M + 50 × $1.60/M = $0.00092
    expect(lastLine(result.stderr)).toMatch(/^── completed · 2 iterations · 2,100 in · 50 out tokens · \$0\.0009 · /)
    expect(result.stderr).not.toContain(KEY)
  })

  it("the endpoint from AZURE_OPENAI_ENDPOINT, the v1 URL without a version; a missing key or endpoint is one line naming what to set", async (context) => {
    const KEY = "azure-cli-key-abcdef0123"
    const { server, workspace, env, root } = await setup(context, (request, index) =>
      request.url !== "/openai/v1/chat/completions" || request.headers["api-key"] !== KEY
        ? { status: 404, error: request.url }
        : index === 1
        ? { text: "Tues", cut: true }
        : turn[Math.min(index, 2) - (index === 0 ? 0 : 1)]!)
    const flags = ["--model", "gpt-4.1-mini", "--workspace", workspace, "--ephemeral", "When?"]
    const v1 = await runCli(["run", "--provider", "azure", ...flags], { env: { ...env, AZURE_OPENAI_API_KEY: KEY, AZURE_OPENAI_ENDPOINT: root } })
    expect([v1.code, v1.stdout]).toEqual([0, "Tuesday.\n"])
    // the first answer's stream was cut after a few words: it is asked for again
    expect(server.requests).toHaveLength(3)
    expect(v1.stderr).toMatch(/retry/i)
    const noKey = await runCli(["run", "--provider", "azure", ...flags], { env: { ...env, AZURE_OPENAI_ENDPOINT: root } })
    expect([noKey.code, noKey.stderr]).toEqual([1, "agent-loop: AZURE_OPENAI_API_KEY or AZURE_OPENAI_AD_TOKEN is not set: export it\n"])
    const noEndpoint = await runCli(["run", "--provider", "azure-responses", ...flags], { env: { ...env, AZURE_OPENAI_API_KEY: KEY } })
    expect([noEndpoint.code, noEndpoint.stderr]).toEqual([
      1,
      "agent-loop: --provider azure-responses needs its URL: pass --base-url, set \"baseUrl\" in a settings file, or export AZURE_OPENAI_ENDPOINT\n"
    ])
    expect(server.requests).toHaveLength(3)
  })

  it("an Entra ID token from AZURE_OPENAI_AD_TOKEN goes as a bearer token", async (context) => {
    const TOKEN = "eyJ0eXAi.entra-cli-token"
    const { server, workspace, env, root } = await setup(context, (request, index) =>
      request.headers["authorization"] === `Bearer ${TOKEN}` && request.headers["api-key"] === undefined ? turn[index]! : { status: 401, error: "no token" })
    const result = await runCli(
      ["run", "--provider", "azure", "--base-url", root, "--api-key-env", "AZURE_OPENAI_AD_TOKEN", "--model", "gpt-4.1-mini", "--workspace", workspace, "--ephemeral", "When?"],
      { env: { ...env, AZURE_OPENAI_AD_TOKEN: TOKEN } }
    )
    expect([result.code, result.stdout]).toEqual([0, "Tuesday.\n"])
    expect(server.requests).toHaveLength(2)
    // a token the server refuses ends the run with the server's words, and is not retried
    const refused = await runCli(
      ["run", "--provider", "azure", "--base-url", root, "--api-key-env", "AZURE_OPENAI_AD_TOKEN", "--model", "gpt-4.1-mini", "--workspace", workspace, "--ephemeral", "When?"],
      { env: { ...env, AZURE_OPENAI_AD_TOKEN: "expired-token-0123456789" } }
    )
    expect(refused.code).toBe(1)
    expect(lastLine(refused.stderr)).toBe("agent-loop: ProviderRejected: no token")
    expect(server.requests).toHaveLength(3)
  })
})

describe.concurrent("Amazon Bedrock through the CLI", () => {
  const CREDENTIALS = { accessKeyId: "AKIDCLITEST000001", secretAccessKey: "cli-secret-access-key-0123456789" }
  const MODEL = "anthropic.claude-haiku-4-5-20251001-v1:0"

  it("a whole turn over the event stream, signed with the environment's AWS keys: tool call, result, answer, usage and cost", async (context) => {
    const server = await startBedrock(async (request, index) =>
      !(await signatureValid(request, CREDENTIALS, "us-west-2"))
        ? { status: 403, type: "InvalidSignatureException", message: "The request signature we calculated does not match the signature you provided." }
        : index === 0
        ? { frames: toolReply([{ id: "tooluse_cli_1", name: "read_file", input: { path: "notes.md" } }], { input: 1000, output: 40 }) }
        : { frames: textReply(["Tues", "day."], 1100, 20) })
    context.onTestFinished(() => server.close())
    const home = tempDir()
    const workspace = path.join(home, "ws")
    fs.mkdirSync(workspace)
    fs.writeFileSync(path.join(workspace, "notes.md"), "the launch is on Tuesday\n")
    const env = isolatedEnv(home, { AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey, AWS_REGION: "us-west-2" })
    const cassette = path.join(home, "bedrock.jsonl")
    const result = await runCli(
      ["run", "--provider", "bedrock", "--base-url", server.url, "--model", MODEL, "--workspace", workspace, "--ephemeral", "--record", cassette, "When is the launch?"],
      { env }
    )
    expect(result.stderr).not.toContain("not in the built-in registry")
    expect([result.code, result.stdout]).toEqual([0, "Tuesday.\n"])
    expect(server.requests.map((r) => r.path)).toEqual([`/model/${encodeURIComponent(MODEL)}/converse-stream`, `/model/${encodeURIComponent(MODEL)}/converse-stream`])
    const results = server.requests[1]!.json.messages.at(-1).content.filter((block: any) => block.toolResult !== undefined)
    expect(results[0].toolResult.toolUseId).toBe("tooluse_cli_1")
    expect(JSON.stringify(results[0].toolResult.content)).toContain("the launch is on Tuesday")
    // the registry's output limit is sent, as Claude's thinking needs one
    expect(server.requests[0]!.json.inferenceConfig.maxTokens).toBe(64_000)
    // 2100 × $1/M + 60 × $5/M = $0.0024
    expect(lastLine(result.stderr)).toMatch(/^── completed · 2 iterations · 2,100 in · 60 out tokens · \$0\.0024 · /)
    expect(result.stderr).not.toContain(CREDENTIALS.secretAccessKey)
    // the cassette replays the turn with no server and no credentials
    await server.close()
    const replayed = await runCli(["run", "--replay", cassette, "--workspace", workspace, "--ephemeral", "When is the launch?"], { env: isolatedEnv(home) })
    expect([replayed.code, replayed.stdout]).toEqual([0, "Tuesday.\n"])
    expect(fs.readFileSync(cassette, "utf8")).not.toContain(CREDENTIALS.secretAccessKey)
  })

  it("throttling mid-stream is retried; without a region the CLI says which variable to set; a Bedrock API key needs no AWS keys", async (context) => {
    const server = await startBedrock((request, index) =>
      index === 0
        ? { frames: [...textReply(["par"]).slice(0, 2), exceptionFrame("throttlingException", "Too many tokens, please wait before trying again.")] }
        : request.headers["authorization"] === "Bearer bedrock-api-key-cli"
        ? { frames: textReply(["done"]) }
        : { status: 403, type: "AccessDeniedException", message: "no" })
    context.onTestFinished(() => server.close())
    const home = tempDir()
    const env = isolatedEnv(home, { AWS_BEARER_TOKEN_BEDROCK: "bedrock-api-key-cli", AWS_DEFAULT_REGION: "eu-central-1" })
    const flags = ["--provider", "bedrock", "--model", "amazon.nova-lite-v1:0", "--workspace", home, "--ephemeral", "hi"]
    const result = await runCli(["run", "--base-url", server.url, "--api-key-env", "AWS_BEARER_TOKEN_BEDROCK", ...flags], { env })
    expect([result.code, result.stdout]).toEqual([0, "done\n"])
    expect(server.requests).toHaveLength(2)
    expect(result.stderr).toMatch(/retry/i)
    const noRegion = await runCli(["run", ...flags], { env: { ...env, AWS_DEFAULT_REGION: "" } })
    expect([noRegion.code, noRegion.stderr]).toEqual([1, "agent-loop: --provider bedrock needs an AWS region: export AWS_REGION, or set \"region\" in a settings file\n"])
  })
})

describe.concurrent("typed answers on Bedrock through the CLI", () => {
  it("--output-schema: the answer comes through the respond tool in the Converse request, and is printed as output", async (context) => {
    const schema = { type: "object", properties: { day: { type: "string" } }, required: ["day"], additionalProperties: false }
    const server = await startBedrock(() => ({ frames: toolReply([{ id: "tooluse_answer", name: "respond", input: { day: "Tuesday" } }]) }))
    context.onTestFinished(() => server.close())
    const home = tempDir()
    const schemaFile = path.join(home, "answer.schema.json")
    fs.writeFileSync(schemaFile, JSON.stringify(schema))
    const env = isolatedEnv(home, { AWS_BEARER_TOKEN_BEDROCK: "bedrock-key-typed", AWS_REGION: "us-east-1" })
    const result = await runCli([
      "run", "--provider", "bedrock", "--base-url", server.url, "--api-key-env", "AWS_BEARER_TOKEN_BEDROCK", "--model", "anthropic.claude-haiku-4-5-20251001-v1:0", "--workspace", home,
      "--ephemeral", "--output-format", "json", "--output-schema", schemaFile, "Which day?"
    ], { env })
    expect(result.code, result.stderr).toBe(0)
    expect(JSON.parse(result.stdout)).toMatchObject({ status: "completed", output: { day: "Tuesday" }, error: null })
    const respond = server.requests[0]!.json.toolConfig.tools.find((tool: any) => tool.toolSpec?.name === "respond")
    expect(respond.toolSpec.inputSchema.json).toEqual(schema)
  })
})

describe.concurrent("named OpenAI-compatible clouds through the CLI", () => {
  it("groq: its key variable as a bearer token, its model's price from its own table", async (context) => {
    const KEY = "gsk_groq_cli_0123456789"
    const { server, workspace, env } = await setup(context, (request, index) =>
      request.headers["authorization"] === `Bearer ${KEY}` ? turn[index]! : { status: 401, error: "Invalid API Key" }, { GROQ_API_KEY: KEY })
    const result = await runCli(
      ["run", "--provider", "groq", "--base-url", server.url, "--api-key-env", "GROQ_API_KEY", "--model", "openai/gpt-oss-120b", "--workspace", workspace, "--ephemeral", "When?"],
      { env }
    )
    expect([result.code, result.stdout]).toEqual([0, "Tuesday.\n"])
    expect(toolResult(server.requests[1]!.body)).toContain("the launch is on Tuesday")
    // Groq's price, not OpenRouter's for the same id: 2100 × $0.15/M + 50 × $0.60/M = $0.000345
    expect(lastLine(result.stderr)).toMatch(/^── completed · 2 iterations · 2,100 in · 50 out tokens · \$0\.0003 · /)
  })

  it("openrouter: a key from the variable apiKeyEnv names, and the attribution headers of the settings", async (context) => {
    const KEY = "sk-or-v1-cli-0123456789"
    const { server, workspace, env, home } = await setup(context, (request, index) =>
      request.headers["authorization"] === `Bearer ${KEY}` ? turn[index]! : { status: 401, error: "No auth credentials found" }, { TEAM_OPENROUTER_KEY: KEY })
    fs.mkdirSync(path.join(home, "config", "agent-loop"), { recursive: true })
    fs.writeFileSync(path.join(home, "config", "agent-loop", "settings.json"), JSON.stringify({
      provider: "openrouter",
      apiKeyEnv: "TEAM_OPENROUTER_KEY",
      headers: { "HTTP-Referer": "https://example.com/app", "X-Title": "Example App" }
    }))
    const flags = ["--base-url", server.url, "--model", "anthropic/claude-haiku-4.5", "--workspace", workspace, "--ephemeral", "When?"]
    const result = await runCli(["run", ...flags], { env })
    expect([result.code, result.stdout]).toEqual([0, "Tuesday.\n"])
    expect(server.requests[0]!.headers["http-referer"]).toBe("https://example.com/app")
    expect(server.requests[0]!.headers["x-title"]).toBe("Example App")
    expect(lastLine(result.stderr)).toMatch(/ · \$0\.00\d+ · /)
    const missing = await runCli(["run", ...flags.slice(2)], { env: { ...env, TEAM_OPENROUTER_KEY: "" } })
    expect([missing.code, missing.stderr]).toEqual([
      1,
      "agent-loop: TEAM_OPENROUTER_KEY (the settings' \"apiKeyEnv\") is not set: export it, or pass --base-url for a server that needs no key\n"
    ])
  })

  it("a cloud's missing key names its variable; a local server takes none and is sent no one's key", async (context) => {
    const { server, workspace, env } = await setup(context, (request, index) =>
      request.headers["authorization"] === undefined ? turn[index]! : { status: 400, error: "unexpected key" }, { OPENAI_API_KEY: "sk-openai-not-for-ollama" })
    for (const [name, variable] of [["groq", "GROQ_API_KEY"], ["mistral", "MISTRAL_API_KEY"], ["deepseek", "DEEPSEEK_API_KEY"], ["xai", "XAI_API_KEY"]]) {
      const missing = await runCli(["run", "--provider", name!, "--model", "m", "--ephemeral", "hi"], { env })
      expect([missing.code, missing.stderr]).toEqual([1, `agent-loop: ${variable} is not set: export it, or pass --base-url for a server that needs no key\n`])
    }
    const local = await runCli(["run", "--provider", "ollama", "--base-url", server.url, "--model", "qwen3", "--workspace", workspace, "--ephemeral", "When?"], { env })
    expect([local.code, local.stdout]).toEqual([0, "Tuesday.\n"])
    expect(local.stderr).toMatch(/note: model "qwen3" is not in the built-in registry.*its cost is unknown/)
    expect(server.requests.map((r) => r.headers["authorization"])).toEqual([undefined, undefined])
  })
})

describe.concurrent("models and help", () => {
  it("models --provider lists one provider's models; an unknown provider fails with the list", async () => {
    const env = isolatedEnv(tempDir())
    const groq = await runCli(["models", "--provider", "groq"], { env })
    expect(groq.code).toBe(0)
    const rows = groq.stdout.trimEnd().split("\n").slice(1)
    expect(rows.length).toBeGreaterThan(3)
    for (const row of rows) expect(row).toMatch(/^\S+\s+groq\s/)
    expect(groq.stdout).toMatch(/^llama-3\.3-70b-versatile\s+groq\s+131,072\s+32,768\s+\$0\.59\s+\$0\.79\s+-\s+-\s+no\s+no$/m)
    const bedrock = await runCli(["models", "--provider", "bedrock"], { env })
    expect(bedrock.stdout).toMatch(/^anthropic\.claude-sonnet-4-5-20250929-v1:0\s+bedrock\s+200k\s+64k\s+\$3\s+\$15\s+\$0\.3\s+\$3\.75\s+yes\s+yes$/m)
    const azure = await runCli(["models", "--provider", "azure"], { env })
    expect(azure.stdout).toMatch(/^gpt-4\.1-mini\s+openai\s/m)
    const local = await runCli(["models", "--provider", "ollama"], { env })
    expect([local.code, local.stdout, local.stderr]).toEqual([0, "", "ollama serves the models its server has: the registry lists none for it\n"])
    const unknown = await runCli(["models", "--provider", "nope"], { env })
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toMatch(/^agent-loop: unknown provider "nope"; providers: openai, /)
  })

  it("--provider help names every provider and its key variable", async () => {
    const help = await runCli(["run", "--help"], { env: isolatedEnv(tempDir()) })
    const text = help.stdout.replace(/\s+/g, " ")
    for (const provider of providers) {
      expect(text).toContain(`${provider.name} (`)
      for (const variable of provider.keyVariables) expect(text).toContain(variable)
    }
  })
})
