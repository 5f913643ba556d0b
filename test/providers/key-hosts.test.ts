/**
 * Where a key found in the environment goes: to the provider's own host only. A `baseUrl`
 * elsewhere (a local server, a proxy) gets no key unless one is given (`apiKey`) or its variable
 * named (`apiKeyEnv`); a key withheld so is named in the error of a 401. The keys are set in
 * `process.env` itself, as a user's shell sets them, and put back after each test.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { afterEach, describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Redacted, Stream } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"
import { Anthropic, Azure, Bedrock, Gemini, OpenAiCompatible, OpenAiResponses, Provider, type ProviderShape, type ProviderTypes, Vertex } from "effect-agent-loop"
import { start } from "../support/wireServer.ts"

const request: ProviderTypes.ProviderRequest = { model: "m", messages: [{ role: "user", content: "hi" }], tools: [] }
const unauthorized = { status: 401, headers: { "content-type": "application/json" }, body: [JSON.stringify({ error: { message: "Missing credentials" } })] }

const saved = new Map<string, string | undefined>()
/** Sets variables of `process.env` for this test; `afterEach` puts them back. */
const setEnv = (values: Record<string, string>) => {
  for (const [name, value] of Object.entries(values)) {
    if (!saved.has(name)) saved.set(name, process.env[name])
    process.env[name] = value
  }
}
/**
 * The environment as it is now: Effect's default config provider is a copy of `process.env` made
 * once per process, so each provider is built with a fresh one.
 */
const currentEnv = Effect.provideServiceEffect(ConfigProvider.ConfigProvider, Effect.sync(() => ConfigProvider.fromEnv()))

afterEach(() => {
  for (const [name, value] of saved) {
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
  }
  saved.clear()
})

/** The headers of the one request `make` (given a loopback URL) sends, and the error it fails with. */
const sentTo = <E>(make: (url: string) => Effect.Effect<ProviderShape, E, HttpClient.HttpClient>) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* start([unauthorized])
    const provider = yield* make(server.url).pipe(currentEnv)
    const error = yield* Effect.flip(Stream.runDrain(provider.stream(request)))
    return { headers: server.requests[0]!.headers, error }
  })).pipe(Effect.provide(NodeHttpClient.layerUndici))

/** The headers of the one request `make` sends to the provider's own host, caught by a client that answers 401 itself. */
const sentHome = <E>(make: Effect.Effect<ProviderShape, E, HttpClient.HttpClient>) =>
  Effect.gen(function*() {
    const seen: Array<{ url: string; headers: Readonly<Record<string, string>> }> = []
    const client = HttpClient.make((req) => {
      seen.push({ url: req.url, headers: req.headers })
      return Effect.succeed(HttpClientResponse.fromWeb(req, new Response(unauthorized.body[0], { status: 401 })))
    })
    const provider = yield* make.pipe(Effect.provide(Layer.succeed(HttpClient.HttpClient, client)))
    yield* Effect.flip(Stream.runDrain(provider.stream(request)))
    return seen[0]!
  }).pipe(currentEnv)

/** The provider a layer builds. */
const providerOf = <E, R>(layer: Layer.Layer<Provider, E, R>) => Effect.provide(Effect.service(Provider), layer)

const KEY = "sk-env-0123456789abcdef"
const GIVEN = "sk-given-0123456789abcdef"

describe("a key from the environment goes to the provider's own host only", () => {
  it.live("OpenAiCompatible: a baseUrl elsewhere gets no OPENAI_API_KEY; apiKey or apiKeyEnv sends one", () =>
    Effect.gen(function*() {
      setEnv({ OPENAI_API_KEY: KEY })
      const local = yield* sentTo((url) => OpenAiCompatible.make({ baseUrl: `${url}/v1` }))
      expect(local.headers["authorization"]).toBeUndefined()
      // the 401 says why, without the key
      expect(local.error.message).toContain("OPENAI_API_KEY is set but was not sent")
      expect(local.error.message).not.toContain(KEY)
      const given = yield* sentTo((url) => OpenAiCompatible.make({ baseUrl: `${url}/v1`, apiKey: Redacted.make(GIVEN) }))
      expect(given.headers["authorization"]).toBe(`Bearer ${GIVEN}`)
      expect(given.error.message).not.toContain("was not sent")
      const named = yield* sentTo((url) => OpenAiCompatible.make({ baseUrl: `${url}/v1`, apiKeyEnv: "OPENAI_API_KEY" }))
      expect(named.headers["authorization"]).toBe(`Bearer ${KEY}`)
      const home = yield* sentHome(OpenAiCompatible.make())
      expect(home.url).toBe("https://api.openai.com/v1/chat/completions")
      expect(home.headers["authorization"]).toBe(`Bearer ${KEY}`)
      const homeAgain = yield* sentHome(OpenAiCompatible.make({ baseUrl: "https://api.openai.com/v1/" }))
      expect(homeAgain.headers["authorization"]).toBe(`Bearer ${KEY}`)
      // the same host over plain HTTP is not the same place
      const plain = yield* sentHome(OpenAiCompatible.make({ baseUrl: "http://api.openai.com/v1" }))
      expect(plain.headers["authorization"]).toBeUndefined()
    }))

  it.live("OpenAiResponses and Anthropic likewise", () =>
    Effect.gen(function*() {
      setEnv({ OPENAI_API_KEY: KEY, ANTHROPIC_API_KEY: KEY })
      expect((yield* sentTo((url) => OpenAiResponses.make({ baseUrl: url }))).headers["authorization"]).toBeUndefined()
      expect((yield* sentTo((url) => OpenAiResponses.make({ baseUrl: url, apiKey: Redacted.make(GIVEN) }))).headers["authorization"]).toBe(`Bearer ${GIVEN}`)
      expect((yield* sentHome(OpenAiResponses.make())).headers["authorization"]).toBe(`Bearer ${KEY}`)
      expect((yield* sentTo((url) => Anthropic.make({ baseUrl: url }))).headers["x-api-key"]).toBeUndefined()
      expect((yield* sentTo((url) => Anthropic.make({ baseUrl: url, apiKeyEnv: "ANTHROPIC_API_KEY" }))).headers["x-api-key"]).toBe(KEY)
      expect((yield* sentHome(Anthropic.make())).headers["x-api-key"]).toBe(KEY)
    }))

  it.live("Gemini: neither GEMINI_API_KEY nor GOOGLE_API_KEY goes elsewhere", () =>
    Effect.gen(function*() {
      setEnv({ GEMINI_API_KEY: KEY, GOOGLE_API_KEY: "google-0123456789" })
      expect((yield* sentTo((url) => Gemini.make({ baseUrl: url }))).headers["x-goog-api-key"]).toBeUndefined()
      expect((yield* sentTo((url) => Gemini.make({ baseUrl: url, apiKeyEnv: "GOOGLE_API_KEY" }))).headers["x-goog-api-key"]).toBe("google-0123456789")
      expect((yield* sentHome(Gemini.make())).headers["x-goog-api-key"]).toBe(KEY)
    }))

  it.live("a preset's own host is its default: GROQ_API_KEY goes to Groq, not to a baseUrl elsewhere", () =>
    Effect.gen(function*() {
      setEnv({ GROQ_API_KEY: KEY, OPENAI_API_KEY: "sk-openai-0123456789" })
      const home = yield* sentHome(providerOf(OpenAiCompatible.preset("groq")))
      expect(home.url).toBe("https://api.groq.com/openai/v1/chat/completions")
      expect(home.headers["authorization"]).toBe(`Bearer ${KEY}`)
      const elsewhere = yield* sentTo((url) => providerOf(OpenAiCompatible.preset("groq", { baseUrl: url })))
      expect(elsewhere.headers["authorization"]).toBeUndefined()
    }))

  it.live("Azure: the key goes to Azure's hosts and to AZURE_OPENAI_ENDPOINT, not to another baseUrl", () =>
    Effect.gen(function*() {
      setEnv({ AZURE_OPENAI_API_KEY: KEY })
      expect((yield* sentTo((url) => Azure.make({ baseUrl: url }))).headers["api-key"]).toBeUndefined()
      expect((yield* sentTo((url) => Azure.make({ baseUrl: url, apiKeyEnv: "AZURE_OPENAI_API_KEY" }))).headers["api-key"]).toBe(KEY)
      const fromEnv = yield* sentTo((url) => {
        setEnv({ AZURE_OPENAI_ENDPOINT: url })
        return Azure.make()
      })
      expect(fromEnv.headers["api-key"]).toBe(KEY)
      const azure = yield* sentHome(Azure.make({ baseUrl: "https://my-resource.openai.azure.com" }))
      expect(azure.headers["api-key"]).toBe(KEY)
    }))

  it.live("Bedrock: AWS_BEARER_TOKEN_BEDROCK goes to AWS's hosts only", () =>
    Effect.gen(function*() {
      setEnv({ AWS_BEARER_TOKEN_BEDROCK: KEY })
      const credentials = { accessKeyId: "AKIDEXAMPLETEST01", secretAccessKey: Redacted.make("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY") }
      const proxy = yield* sentTo((url) => Bedrock.make({ baseUrl: url, region: "us-east-1", credentials }))
      expect(proxy.headers["authorization"]).not.toContain(KEY)
      expect((yield* sentHome(Bedrock.make({ region: "us-east-1" }))).headers["authorization"]).toBe(`Bearer ${KEY}`)
    }))

  it.live("Vertex: Application Default Credentials' tokens go to Google's hosts only; given credentials go where they are told", () =>
    Effect.gen(function*() {
      const auth = { getRequestHeaders: async () => ({ authorization: "Bearer host-token-0123456789" }) }
      const local = yield* sentTo((url) => Vertex.make({ baseUrl: url, project: "p" }))
      expect(local.headers["authorization"]).toBeUndefined()
      const given = yield* sentTo((url) => Vertex.make({ baseUrl: url, project: "p", auth }))
      expect(given.headers["authorization"]).toBe("Bearer host-token-0123456789")
    }))
})
