/**
 * `agent-loop run --provider gemini` and `--provider vertex` end to end: the real CLI as a child
 * process against loopback servers speaking Gemini SSE (and, for Vertex, Google's token endpoint
 * and Claude's Messages stream): a tool call, its result, the final answer, usage and cost; the
 * signatures sent back; cassettes; the setup's failures in one line.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { isolatedEnv, runCli, tempDir, DURATION } from "../support/cliProcess.ts"
import { chunk, geminiReply } from "../support/geminiWire.ts"
import {
  ACCESS_TOKEN,
  credentialsFile,
  isTokenRequest,
  SERVICE_ACCOUNT_PROJECT,
  serviceAccountFile,
  tokenResponse
} from "../support/googleAdc.ts"
import { anthropicReply } from "../support/wireReplies.ts"
import { type ReceivedRequest, start, type WireResponse } from "../support/wireServer.ts"

const KEY = "AIzaSy-cli-gemini-key-0123456789"

/** A home with a workspace holding `notes.md`. */
const home = () => {
  const dir = tempDir()
  const workspace = path.join(dir, "ws")
  fs.mkdirSync(workspace)
  fs.writeFileSync(path.join(workspace, "notes.md"), "# Notes\nThe answer is 42.\n")
  return { dir, workspace }
}

const run = (args: ReadonlyArray<string>, env: Record<string, string>) => Effect.promise(() => runCli(["run", ...args], { env }))

const lastLine = (text: string) => text.trimEnd().split("\n").at(-1)

/** The model's two replies: read the notes, then answer (with cached and thinking tokens). */
const readThenAnswer: ReadonlyArray<WireResponse> = [
  geminiReply({ toolCall: { id: "fc-read", name: "read_file", arguments: { path: "notes.md" } } }),
  {
    body: [
      chunk([{ text: "The answer " }]),
      chunk([{ text: "is 42.", thoughtSignature: "c2ln" }], {
        usageMetadata: { promptTokenCount: 120_000, cachedContentTokenCount: 100_000, candidatesTokenCount: 2_000, thoughtsTokenCount: 1_000 }
      }, { finishReason: "STOP" })
    ]
  }
]

const modelCalls = (requests: ReadonlyArray<ReceivedRequest>) => requests.filter((r) => !isTokenRequest(r))

// Child processes (up to three per test) on a shared machine: generous deadlines, far above the seconds they take alone.
describe.concurrent("agent-loop with Google's models", { timeout: 180_000 }, () => {
  it.live("--provider gemini: a tool call, its result, the answer, usage and cost; the call's id and signature go back", () =>
    Effect.gen(function*() {
      const server = yield* start(readThenAnswer)
      const { dir, workspace } = home()
      const result = yield* run(
        ["--provider", "gemini", "--base-url", server.url, "--api-key-env", "GOOGLE_API_KEY", "--model", "gemini-2.5-flash", "--workspace", workspace, "--tools", "read_file", "What is the answer?"],
        isolatedEnv(dir, { GOOGLE_API_KEY: KEY })
      )
      expect(result.stderr).not.toContain(KEY)
      expect(result.code).toBe(0)
      expect(result.stdout).toBe("The answer is 42.\n")
      expect(result.stderr).toMatch(new RegExp(String.raw`⚙ read_file \{"path":"notes\.md"\}\n\s+✓ read_file ${DURATION}`))
      // 20,010 uncached at $0.30, 100,000 cached at $0.03, 3,002 out at $2.50 (per million)
      expect(lastLine(result.stderr)).toMatch(
        new RegExp(String.raw`^── completed · 2 iterations · 120,010 in \(100,000 cached\) · 3,002 out \(1,000 reasoning\) tokens · \$0\.0165 · ${DURATION}$`)
      )
      expect(server.requests.map((r) => r.path)).toEqual(Array(2).fill("/models/gemini-2.5-flash:streamGenerateContent?alt=sse"))
      expect(server.requests[0]!.headers["x-goog-api-key"]).toBe(KEY)
      const second = server.requests[1]!.json
      expect(second.tools[0].functionDeclarations.map((d: { name: string }) => d.name)).toEqual(["read_file"])
      expect(second.contents.slice(1)).toEqual([
        { role: "model", parts: [{ functionCall: { id: "fc-read", name: "read_file", args: { path: "notes.md" } }, thoughtSignature: "c2lnLWNhbGw=" }] },
        { role: "user", parts: [{ functionResponse: { id: "fc-read", name: "read_file", response: { output: expect.stringContaining("The answer is 42.") } } }] }
      ])
    }))

  it.live("--provider gemini records a cassette that replays with the server gone", () =>
    Effect.gen(function*() {
      const { dir, workspace } = home()
      const cassette = path.join(dir, "gemini.cassette.jsonl")
      const env = isolatedEnv(dir, { GEMINI_API_KEY: KEY })
      const args = ["--workspace", workspace, "--tools", "read_file", "--ephemeral", "What is the answer?"]
      yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* start(readThenAnswer)
        const recorded = yield* run(["--provider", "gemini", "--base-url", server.url, "--api-key-env", "GEMINI_API_KEY", "--model", "gemini-2.5-flash", "--record", cassette, ...args], env)
        expect(recorded.code).toBe(0)
      }))
      expect(fs.readFileSync(cassette, "utf8")).not.toContain(KEY)
      const replayed = yield* run(["--replay", cassette, ...args], env)
      expect(replayed.code).toBe(0)
      expect(replayed.stdout).toBe("The answer is 42.\n")
    }))

  it.live("--provider vertex: Gemini and Claude with Application Default Credentials from GOOGLE_APPLICATION_CREDENTIALS", () =>
    Effect.gen(function*() {
      const claudeTurn = [
        anthropicReply({ toolCall: { id: "toolu_1", name: "read_file", arguments: { path: "notes.md" } } }),
        anthropicReply({ text: "It is 42.", usage: { input: 2_000, output: 100 } })
      ]
      let claudeCalls = 0
      let geminiCalls = 0
      const server = yield* start((received) =>
        isTokenRequest(received)
          ? tokenResponse
          : received.path.includes("/publishers/anthropic/")
          ? claudeTurn[Math.min(claudeCalls++, 1)]!
          : readThenAnswer[Math.min(geminiCalls++, 1)]!
      )
      const { dir, workspace } = home()
      const env = isolatedEnv(dir, { GOOGLE_APPLICATION_CREDENTIALS: yield* credentialsFile(server.url), GOOGLE_CLOUD_PROJECT: "acme-ai" })
      // a server elsewhere than Google's is sent the credentials only when their variable is named
      const common = ["--provider", "vertex", "--base-url", server.url, "--api-key-env", "GOOGLE_APPLICATION_CREDENTIALS", "--workspace", workspace, "--tools", "read_file"]
      const gemini = yield* run([...common, "--model", "gemini-2.5-flash", "--location", "europe-west4", "What is the answer?"], env)
      expect(gemini.code).toBe(0)
      expect(gemini.stdout).toBe("The answer is 42.\n")
      expect(lastLine(gemini.stderr)).toMatch(/ · \$0\.0165 · /)
      const claude = yield* run([...common, "--model", "claude-haiku-4-5@20251001", "What is the answer?"], env)
      expect(claude.code).toBe(0)
      expect(claude.stdout).toBe("It is 42.\n")
      // 2,010 in at $1 and 102 out at $5 per million
      expect(lastLine(claude.stderr)).toMatch(/^── completed · 2 iterations · 2,010 in · 102 out tokens · \$0\.0025 · /)
      const calls = modelCalls(server.requests)
      expect(calls.map((c) => c.path)).toEqual([
        "/v1/projects/acme-ai/locations/europe-west4/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        "/v1/projects/acme-ai/locations/europe-west4/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        "/v1/projects/acme-ai/locations/global/publishers/anthropic/models/claude-haiku-4-5@20251001:streamRawPredict",
        "/v1/projects/acme-ai/locations/global/publishers/anthropic/models/claude-haiku-4-5@20251001:streamRawPredict"
      ])
      expect(calls.every((c) => c.headers["authorization"] === `Bearer ${ACCESS_TOKEN}`)).toBe(true)
      expect(calls[2]!.json).toMatchObject({ anthropic_version: "vertex-2023-10-16", max_tokens: 64_000 })
      expect(calls[2]!.json.model).toBeUndefined()
      for (const output of [gemini.stderr, claude.stderr, gemini.stdout, claude.stdout]) expect(output).not.toContain(ACCESS_TOKEN)
    }))

  it.live("--provider vertex from a settings file: its project and location, under GOOGLE_CLOUD_LOCATION and --project", () =>
    Effect.gen(function*() {
      const server = yield* start((received) => isTokenRequest(received) ? tokenResponse : geminiReply({ text: "Hi." }))
      const { dir, workspace } = home()
      const config = path.join(dir, "config", "agent-loop")
      fs.mkdirSync(config, { recursive: true })
      fs.writeFileSync(
        path.join(config, "settings.json"),
        JSON.stringify({ provider: "vertex", project: "settings-project", location: "asia-northeast1", model: "gemini-2.5-flash", baseUrl: server.url })
      )
      const env = isolatedEnv(dir, { GOOGLE_APPLICATION_CREDENTIALS: yield* credentialsFile(server.url) })
      const args = ["--workspace", workspace, "--tools", "", "--ephemeral", "hi"]
      expect((yield* run(args, env)).code).toBe(0)
      expect((yield* run(["--project", "flag-project", ...args], { ...env, GOOGLE_CLOUD_PROJECT: "env-project", GOOGLE_CLOUD_LOCATION: "us" })).code).toBe(0)
      expect(modelCalls(server.requests).map((r) => r.path)).toEqual([
        "/v1/projects/settings-project/locations/asia-northeast1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        "/v1/projects/flag-project/locations/us/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
      ])
    }))

  it.live("--provider vertex with a service account file and no project: the file's project, a token signed with its key", () =>
    Effect.gen(function*() {
      const server = yield* start([anthropicReply({ text: "Hi." })])
      const account = yield* serviceAccountFile
      const { dir, workspace } = home()
      const result = yield* run(
        ["--provider", "vertex", "--base-url", server.url, "--api-key-env", "GOOGLE_APPLICATION_CREDENTIALS", "--model", "claude-haiku-4-5", "--workspace", workspace, "--tools", "", "--ephemeral", "hi"],
        isolatedEnv(dir, { GOOGLE_APPLICATION_CREDENTIALS: account.file })
      )
      expect(result.code).toBe(0)
      expect(result.stdout).toBe("Hi.\n")
      expect(server.requests[0]!.path).toBe(`/v1/projects/${SERVICE_ACCOUNT_PROJECT}/locations/global/publishers/anthropic/models/claude-haiku-4-5:streamRawPredict`)
      expect(account.signedByIt(server.requests[0]!.headers["authorization"])).toBe(true)
    }))

  it.live("--provider gemini: a rate limit inside the stream and a dropped stream are retried, and the turn completes", () =>
    Effect.gen(function*() {
      const quota = { error: { code: 429, status: "RESOURCE_EXHAUSTED", message: "Quota exceeded", details: [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "0s" }] } }
      const server = yield* start([
        { body: [chunk([{ text: "Let me" }]), `data: ${JSON.stringify(quota)}\n\n`] },
        { body: [chunk([{ text: "Let me" }])], drop: true },
        geminiReply({ text: "Done." })
      ])
      const { dir, workspace } = home()
      const result = yield* run(
        ["--provider", "gemini", "--base-url", server.url, "--api-key-env", "GEMINI_API_KEY", "--model", "gemini-2.5-flash", "--workspace", workspace, "--tools", "", "--events", path.join(dir, "events.jsonl"), "hi"],
        isolatedEnv(dir, { GEMINI_API_KEY: KEY })
      )
      expect(result.code).toBe(0)
      expect(result.stdout).toMatch(/Done\.\n$/)
      expect(server.requests).toHaveLength(3)
      const retries = fs.readFileSync(path.join(dir, "events.jsonl"), "utf8").trimEnd().split("\n").map((line) => JSON.parse(line)).filter((e) => e._tag === "LLMRetry")
      expect(retries.map((e) => e.reason)).toEqual([
        "RateLimited: Quota exceeded",
        expect.stringMatching(/^ProviderUnavailable: Connection lost mid-stream/)
      ])
      expect(retries[0].delayMs).toBe(0)
    }))

  it.live("a missing Gemini key fails in one line before any request; a refused call says why", () =>
    Effect.gen(function*() {
      const { dir, workspace } = home()
      const env = isolatedEnv(dir)
      const noKey = yield* run(["--provider", "gemini", "--model", "gemini-2.5-flash", "--workspace", workspace, "hi"], env)
      expect(noKey.code).toBe(1)
      expect(noKey.stderr).toContain("GEMINI_API_KEY or GOOGLE_API_KEY is not set")
      const server = yield* start([{ status: 400, body: [JSON.stringify({ error: { code: 400, status: "INVALID_ARGUMENT", message: "API key not valid. Please pass a valid API key." } })] }])
      const refused = yield* run(
        ["--provider", "gemini", "--base-url", server.url, "--api-key-env", "GEMINI_API_KEY", "--model", "gemini-2.5-flash", "--workspace", workspace, "hi"],
        isolatedEnv(dir, { GEMINI_API_KEY: KEY })
      )
      expect(refused.code).toBe(1)
      expect(lastLine(refused.stderr)).toContain("API key not valid")
      expect(server.requests).toHaveLength(1)
    }))
})
