/**
 * The CLI's resolved settings without a process: from flags, environment and settings files to
 * the provider, model, limits, prices and keys of `run` and `chat`, and the one-line failures of
 * impossible combinations.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option, Redacted } from "effect"
import type { AgentFlags } from "../../src/cli/settings/flags.ts"
import * as ProviderKeys from "../../src/cli/providers/providerKeys.ts"
import * as Screen from "../../src/cli/terminal/screen.ts"
import * as Settings from "../../src/cli/settings/settings.ts"
import { tempDir as makeTempDir } from "../support/cliProcess.ts"
import { recordingScreen } from "../support/screen.ts"

const tempDir = () => makeTempDir("cli-parts-")

const liveScreen = () => recordingScreen({ isTTY: true })

describe("resolved settings", () => {
  const flags = (over: Partial<AgentFlags>): AgentFlags => ({
    provider: Option.none(),
    baseUrl: Option.none(),
    apiKeyEnv: Option.none(),
    project: Option.none(),
    location: Option.none(),
    model: Option.none(),
    system: Option.none(),
    session: Option.none(),
    continue: false,
    resume: Option.none(),
    ephemeral: true,
    store: Option.none(),
    databaseUrl: Option.none(),
    maxIterations: Option.none(),
    tools: Option.none(),
    workspace: Option.some(tempDir()),
    yes: false,
    approval: Option.none(),
    allow: [],
    deny: [],
    allowedTools: [],
    disallowedTools: [],
    approvalTimeout: Option.none(),
    permissionMode: Option.none(),
    dangerouslySkipPermissions: false,
    appendSystemPrompt: Option.none(),
    addDir: [],
    sandbox: Option.none(),
    claudeSettings: true,
    contextFiles: false,
    settings: true,
    events: Option.none(),
    record: Option.none(),
    replay: Option.none(),
    mcpConfig: Option.none(),
    mcpWorkspace: false,
    temperature: Option.none(),
    topP: Option.none(),
    stop: [],
    seed: Option.none(),
    maxTokens: Option.none(),
    reasoningEffort: Option.none(),
    thinkingBudget: Option.none(),
    verbose: false,
    ...over
  })
  const resolveWith = (over: Partial<AgentFlags>, keys: ProviderKeys.Keys = {}, moreEnv: Record<string, string> = {}) => {
    const { out, screen } = liveScreen()
    const env = { XDG_CONFIG_HOME: nodePath.join(tempDir(), "config"), AGENT_LOOP_DATA_DIR: tempDir(), ...moreEnv }
    return Settings.resolve(flags(over), env).pipe(
      Effect.provide(Layer.mergeAll(NodeServices.layer, Layer.succeed(Screen.Screen, screen), Layer.succeed(ProviderKeys.ProviderKeys, keys))),
      Effect.map((settings) => ({ settings, stderr: out.stderr }))
    )
  }

  it.effect("a registry model brings its window, its price, and for Anthropic its output limit", () =>
    Effect.gen(function*() {
      const key = Redacted.make("sk-ant-test-0123456789")
      const { settings, stderr } = yield* resolveWith({ provider: Option.some("anthropic"), model: Option.some("claude-sonnet-4-5-20250929") }, { ANTHROPIC_API_KEY: key })
      expect(settings.provider).toMatchObject({ _tag: "live", name: "anthropic", baseUrl: undefined, apiKey: key })
      expect(settings.contextWindow).toBe(200_000)
      expect(settings.maxTokens).toBe(64_000)
      expect(settings.prices?.["claude-sonnet-4-5-20250929"]).toEqual({ inputPerMillion: 3, outputPerMillion: 15, cachedInputPerMillion: 0.3, cacheWritePerMillion: 3.75 })
      expect(settings.notices).toEqual([])
      expect(stderr).toBe("")
      const openai = yield* resolveWith({ model: Option.some("gpt-4.1"), baseUrl: Option.some("http://127.0.0.1:9/v1") })
      expect(openai.settings.maxTokens).toBeUndefined()
      expect(openai.settings.contextWindow).toBe(1_047_576)
    }))

  it.effect("an unknown model keeps the loop's defaults, has no prices, and gets one note", () =>
    Effect.gen(function*() {
      const { settings } = yield* resolveWith({ model: Option.some("qwen3"), baseUrl: Option.some("http://127.0.0.1:9/v1") })
      expect([settings.contextWindow, settings.maxTokens, settings.prices]).toEqual([undefined, undefined, undefined])
      expect(settings.notices).toEqual([{ level: "note", text: expect.stringMatching(/^model "qwen3" is not in the built-in registry/) }])
      const { out, screen } = liveScreen()
      yield* Settings.announce(settings).pipe(Effect.provideService(Screen.Screen, screen))
      expect(out.stderr).toMatch(/^agent-loop: note: model "qwen3" is not in the built-in registry .*128,000-token context window is assumed, and its cost is unknown/)
    }))

  it.effect("a provider on its vendor's URL without its key fails before anything starts; a custom URL needs none", () =>
    Effect.gen(function*() {
      const openai = yield* Effect.exit(resolveWith({ model: Option.some("gpt-4.1") }))
      expect(Exit.isFailure(openai) && openai.cause.toString()).toContain("OPENAI_API_KEY is not set")
      const anthropic = yield* Effect.exit(resolveWith({ provider: Option.some("anthropic"), model: Option.some("claude-haiku-4-5") }))
      expect(Exit.isFailure(anthropic) && anthropic.cause.toString()).toContain("ANTHROPIC_API_KEY is not set")
      const local = yield* resolveWith({ model: Option.some("qwen3"), baseUrl: Option.some("http://127.0.0.1:9/v1") })
      expect(local.settings.provider).toMatchObject({ _tag: "live", name: "openai", baseUrl: "http://127.0.0.1:9/v1", apiKey: undefined })
    }))

  it.effect("a provider's own key goes to its own host only: --base-url elsewhere is sent none, with a note; --api-key-env sends it", () =>
    Effect.gen(function*() {
      const key = Redacted.make("sk-env-0123456789abcdef")
      const model = Option.some("gpt-4.1")
      const local = yield* resolveWith({ model, baseUrl: Option.some("http://127.0.0.1:9/v1") }, { OPENAI_API_KEY: key })
      expect(local.settings.provider).toMatchObject({ _tag: "live", name: "openai", baseUrl: "http://127.0.0.1:9/v1", apiKey: undefined })
      const note = "OPENAI_API_KEY is set but not sent to http://127.0.0.1:9, which is not the provider's own host: --api-key-env OPENAI_API_KEY sends it"
      expect(local.settings.notices).toContainEqual({ level: "note", text: note })
      // OpenAI's own URL, given or not, gets it
      const home = yield* resolveWith({ model, baseUrl: Option.some("https://api.openai.com/v1/") }, { OPENAI_API_KEY: key })
      expect(home.settings.provider).toMatchObject({ apiKey: key })
      expect(home.settings.notices).toEqual([])
      // named explicitly, it goes wherever the URL is; a variable taken out at start is still found
      const named = yield* resolveWith({ model, baseUrl: Option.some("http://127.0.0.1:9/v1"), apiKeyEnv: Option.some("OPENAI_API_KEY") }, { OPENAI_API_KEY: key })
      expect(named.settings.provider).toMatchObject({ apiKey: key, keyVariable: "OPENAI_API_KEY" })
      expect(named.settings.notices).toEqual([])
      const other = yield* resolveWith({ model, baseUrl: Option.some("http://127.0.0.1:9/v1"), apiKeyEnv: Option.some("TEAM_KEY") }, {}, { TEAM_KEY: "team-0123456789" })
      expect(Redacted.value((other.settings.provider as { apiKey: Redacted.Redacted<string> }).apiKey)).toBe("team-0123456789")
      // a preset's URL is its own; elsewhere its key is held back too
      const groq = { provider: Option.some("groq" as const), model: Option.some("llama-3.3-70b-versatile") }
      expect((yield* resolveWith(groq, { GROQ_API_KEY: key })).settings.provider).toMatchObject({ apiKey: key })
      expect((yield* resolveWith({ ...groq, baseUrl: Option.some("http://127.0.0.1:9/v1") }, { GROQ_API_KEY: key })).settings.provider).toMatchObject({ apiKey: undefined })
      // Azure: a gateway elsewhere must be named, the key being required; the endpoint of the environment goes with its key
      const azure = { provider: Option.some("azure" as const), model: Option.some("gpt-4.1") }
      const gateway = yield* Effect.exit(resolveWith({ ...azure, baseUrl: Option.some("http://127.0.0.1:9") }, { AZURE_OPENAI_API_KEY: key }))
      expect(Exit.isFailure(gateway) && gateway.cause.toString()).toContain("--api-key-env AZURE_OPENAI_API_KEY sends it")
      const resource = yield* resolveWith({ ...azure, baseUrl: Option.some("https://my-resource.openai.azure.com") }, { AZURE_OPENAI_API_KEY: key })
      expect(resource.settings.provider).toMatchObject({ apiKey: key })
      const fromEnv = yield* resolveWith(azure, { AZURE_OPENAI_API_KEY: key }, { AZURE_OPENAI_ENDPOINT: "http://127.0.0.1:9" })
      expect(fromEnv.settings.provider).toMatchObject({ baseUrl: "http://127.0.0.1:9", apiKey: key })
      // Vertex AI: Application Default Credentials go to Google's hosts; their file's variable, named, elsewhere
      const vertex = { provider: Option.some("vertex" as const), model: Option.some("gemini-2.5-flash"), project: Option.some("p") }
      const proxy = yield* resolveWith({ ...vertex, baseUrl: Option.some("http://127.0.0.1:9") })
      expect(proxy.settings.notices).toContainEqual({
        level: "note",
        text: "Application Default Credentials are not sent to http://127.0.0.1:9, which is not the provider's own host: --api-key-env GOOGLE_APPLICATION_CREDENTIALS sends those of its file"
      })
      const psc = yield* resolveWith({ ...vertex, baseUrl: Option.some("https://europe-west4-aiplatform.googleapis.com") })
      expect(psc.settings.notices).toEqual([])
      const file = yield* resolveWith({ ...vertex, baseUrl: Option.some("http://127.0.0.1:9"), apiKeyEnv: Option.some("GOOGLE_APPLICATION_CREDENTIALS") }, {}, {
        GOOGLE_APPLICATION_CREDENTIALS: "/etc/adc.json"
      })
      expect(file.settings.notices).toEqual([])
      expect(file.settings.provider).toMatchObject({ keyVariable: "GOOGLE_APPLICATION_CREDENTIALS" })
    }))

  it.effect("sampling and reasoning flags over the settings' modelOptions; bad values and what the API refuses fail with one line naming the flag", () =>
    Effect.gen(function*() {
      const local = { model: Option.some("qwen3"), baseUrl: Option.some("http://127.0.0.1:9/v1") }
      const { settings } = yield* resolveWith({
        ...local,
        temperature: Option.some(0.4),
        topP: Option.some(0.9),
        stop: ["END", "STOP"],
        seed: Option.some(7),
        maxTokens: Option.some(800),
        reasoningEffort: Option.some("high")
      })
      expect(settings.modelOptions).toEqual({ temperature: 0.4, topP: 0.9, stop: ["END", "STOP"], seed: 7, maxTokens: 800, reasoning: { effort: "high" } })
      expect((yield* resolveWith(local)).settings.modelOptions).toBeUndefined()
      const failure = (over: Partial<AgentFlags>, keys: ProviderKeys.Keys = {}) =>
        Effect.map(Effect.flip(resolveWith({ ...local, ...over }, keys)), (error) => (error as { readonly message: string }).message)
      expect(yield* failure({ temperature: Option.some(2.5) })).toBe("--temperature: Expected a value between 0 and 2")
      expect(yield* failure({ maxTokens: Option.some(0) })).toBe("--max-tokens: Expected a value greater than or equal to 1")
      expect(yield* failure({ stop: ["ok", ""] })).toMatch(/^--stop: /)
      const key = { ANTHROPIC_API_KEY: Redacted.make("sk-ant-test-0123456789") }
      const claude = { provider: Option.some("anthropic" as const), model: Option.some("claude-sonnet-4-5"), baseUrl: Option.none() }
      expect(yield* failure({ ...claude, thinkingBudget: Option.some(64_000) }, key)).toBe(
        "Anthropic: reasoning.budgetTokens (64000) must be less than maxTokens (64000): thinking counts against the output limit"
      )
      const thinking = yield* resolveWith({ ...claude, thinkingBudget: Option.some(10_000) }, key)
      expect([thinking.settings.maxTokens, thinking.settings.modelOptions]).toEqual([64_000, { reasoning: { budgetTokens: 10_000 } }])
      const responses = { provider: Option.some("openai-responses" as const), model: Option.some("gpt-5"), baseUrl: Option.none() }
      expect(yield* failure({ ...responses, stop: ["END"] }, { OPENAI_API_KEY: Redacted.make("sk-openai-0123456789") })).toMatch(/no stop sequences/)
    }))

  it.effect("openai-responses takes OpenAI's key and its models' limits and prices", () =>
    Effect.gen(function*() {
      const key = Redacted.make("sk-openai-0123456789")
      const { settings } = yield* resolveWith({ provider: Option.some("openai-responses"), model: Option.some("gpt-4.1"), baseUrl: Option.none() }, { OPENAI_API_KEY: key })
      expect(settings.provider).toMatchObject({ _tag: "live", name: "openai-responses", baseUrl: undefined, apiKey: key })
      expect(settings.contextWindow).toBe(1_047_576)
      expect(settings.prices?.["gpt-4.1"]).toBeDefined()
      const missing = yield* Effect.exit(resolveWith({ provider: Option.some("openai-responses"), model: Option.some("gpt-5"), baseUrl: Option.none() }))
      expect(Exit.isFailure(missing) && missing.cause.toString()).toContain("OPENAI_API_KEY is not set")
    }))

  it.effect("AWS keys leave the environment only when Bedrock is chosen, and reach it; apiKeyEnv's variable leaves it too", () =>
    Effect.gen(function*() {
      const aws = { AWS_ACCESS_KEY_ID: "AKIDPARTS00000001", AWS_SECRET_ACCESS_KEY: "parts-secret-access-key-0123", AWS_REGION: "us-east-2" }
      const resolveIn = (over: Partial<AgentFlags>, extra: Record<string, string>) => {
        const env: NodeJS.ProcessEnv = { XDG_CONFIG_HOME: nodePath.join(tempDir(), "config"), AGENT_LOOP_DATA_DIR: tempDir(), ...extra }
        return Settings.resolve(flags(over), env).pipe(
          Effect.provide(Layer.mergeAll(NodeServices.layer, Layer.succeed(Screen.Screen, liveScreen().screen), Layer.succeed(ProviderKeys.ProviderKeys, {}))),
          Effect.map((settings) => ({ settings, env }))
        )
      }
      const bedrock = yield* resolveIn({ provider: Option.some("bedrock"), model: Option.some("amazon.nova-lite-v1:0") }, aws)
      expect(bedrock.env["AWS_ACCESS_KEY_ID"]).toBeUndefined()
      expect(bedrock.env["AWS_SECRET_ACCESS_KEY"]).toBeUndefined()
      expect(bedrock.env["AWS_REGION"]).toBe("us-east-2")
      const chosen = bedrock.settings.provider
      expect(chosen._tag === "live" && chosen.region).toBe("us-east-2")
      expect(chosen._tag === "live" && Redacted.value(chosen.secrets["AWS_SECRET_ACCESS_KEY"]!)).toBe(aws.AWS_SECRET_ACCESS_KEY)
      // Bedrock's models know their output limit, which Claude's thinking needs sent
      expect(bedrock.settings.maxTokens).toBe(8_192)
      const openai = yield* resolveIn({ model: Option.some("m"), baseUrl: Option.some("http://127.0.0.1:9/v1") }, aws)
      expect(openai.env["AWS_SECRET_ACCESS_KEY"]).toBe(aws.AWS_SECRET_ACCESS_KEY)
      // without apiKeyEnv another variable is not Groq's key
      const unnamed = yield* Effect.flip(resolveIn({ provider: Option.some("groq"), model: Option.some("m") }, { TEAM_KEY: "gsk-team-0123456789" }))
      expect(unnamed.message).toBe("GROQ_API_KEY is not set: export it, or pass --base-url for a server that needs no key")
      const settingsDir = tempDir()
      fs.mkdirSync(nodePath.join(settingsDir, "agent-loop"), { recursive: true })
      fs.writeFileSync(nodePath.join(settingsDir, "agent-loop", "settings.json"), JSON.stringify({ apiKeyEnv: "TEAM_KEY" }))
      const env: NodeJS.ProcessEnv = { XDG_CONFIG_HOME: settingsDir, AGENT_LOOP_DATA_DIR: tempDir(), TEAM_KEY: "gsk-team-0123456789" }
      const viaSetting = yield* Settings.resolve(flags({ provider: Option.some("groq"), model: Option.some("m") }), env).pipe(
        Effect.provide(Layer.mergeAll(NodeServices.layer, Layer.succeed(Screen.Screen, liveScreen().screen), Layer.succeed(ProviderKeys.ProviderKeys, {})))
      )
      expect(env["TEAM_KEY"]).toBeUndefined()
      expect(viaSetting.provider._tag === "live" && Redacted.value(viaSetting.provider.apiKey!)).toBe("gsk-team-0123456789")
      // the settings' region and api-version win over the environment's
      fs.writeFileSync(nodePath.join(settingsDir, "agent-loop", "settings.json"), JSON.stringify({ region: "ap-south-1", apiVersion: "2024-10-21" }))
      const regional = yield* Settings.resolve(flags({ provider: Option.some("bedrock"), model: Option.some("m") }), {
        XDG_CONFIG_HOME: settingsDir,
        AGENT_LOOP_DATA_DIR: tempDir(),
        AWS_REGION: "us-east-1",
        OPENAI_API_VERSION: "2025-01-01-preview"
      }).pipe(Effect.provide(Layer.mergeAll(NodeServices.layer, Layer.succeed(Screen.Screen, liveScreen().screen), Layer.succeed(ProviderKeys.ProviderKeys, {}))))
      expect(regional.provider).toMatchObject({ _tag: "live", name: "bedrock", region: "ap-south-1", apiVersion: "2024-10-21" })
    }))

  it("provider keys are taken out of the environment once; empty ones count as none", () => {
    const env: NodeJS.ProcessEnv = { OPENAI_API_KEY: "sk-openai-0123456789", ANTHROPIC_API_KEY: "", PATH: "/bin" }
    const keys = ProviderKeys.take(env)
    expect(env).toEqual({ PATH: "/bin" })
    const openai = keys["OPENAI_API_KEY"]
    expect(openai && Redacted.value(openai)).toBe("sk-openai-0123456789")
    expect(keys["ANTHROPIC_API_KEY"]).toBeUndefined()
    expect(String(openai)).not.toContain("sk-openai")
  })
})
