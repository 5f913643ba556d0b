/**
 * What `--provider` names, without the provider layers: each provider's name, how the help
 * describes it and the variables its key is read from. The flag definitions and the start-up key
 * scrub need only this, so `--help` loads no provider code; `providers.ts` adds the rest of each row.
 */
import { presetNames, presets } from "../../layers/providers/presets.ts"

/** A provider as `--provider` help and the key scrub see it. */
export interface ProviderSummary {
  readonly name: string
  /** How `--provider` help describes it. */
  readonly summary: string
  /** The variables its key is read from, the first one set winning; empty: it takes none. */
  readonly keyVariables: ReadonlyArray<string>
  /** The provider of the model registry whose models (limits, prices) it serves; none for a server's own. */
  readonly models: string | undefined
}

/** The providers, in the order `--provider` help lists them. */
export const providerSummaries: ReadonlyArray<ProviderSummary> = [
  { name: "openai", summary: "OpenAI Chat Completions, or any server speaking it with --base-url", keyVariables: ["OPENAI_API_KEY"], models: "openai" },
  { name: "openai-responses", summary: "OpenAI's Responses API", keyVariables: ["OPENAI_API_KEY"], models: "openai" },
  { name: "anthropic", summary: "Anthropic Messages", keyVariables: ["ANTHROPIC_API_KEY"], models: "anthropic" },
  // Google's own clients read GOOGLE_API_KEY too
  { name: "gemini", summary: "Google's Gemini API", keyVariables: ["GEMINI_API_KEY", "GOOGLE_API_KEY"], models: "gemini" },
  {
    name: "vertex",
    summary: "Gemini and Claude on Google Cloud's Vertex AI, with Application Default Credentials; --project, --location",
    // no key: Google's Application Default Credentials (and, when none is given, their project), found at the first call
    keyVariables: [],
    models: "gemini"
  },
  {
    name: "azure",
    summary: "Azure OpenAI: --base-url https://RESOURCE.openai.azure.com or AZURE_OPENAI_ENDPOINT, the model names the deployment",
    keyVariables: ["AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN"],
    models: "openai"
  },
  { name: "azure-responses", summary: "Azure OpenAI's Responses API", keyVariables: ["AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN"], models: "openai" },
  {
    name: "bedrock",
    summary: "Amazon Bedrock: region AWS_REGION, AWS credentials (environment, AWS_PROFILE, SSO, roles) or a Bedrock API key",
    keyVariables: ["AWS_BEARER_TOKEN_BEDROCK"],
    models: "bedrock"
  },
  ...presetNames.map((name) => {
    const preset = presets[name]
    // a preset without a key is a local server: its models are whatever it has
    const keyed = preset.apiKeyEnv !== undefined
    return { name, summary: preset.title, keyVariables: keyed ? [preset.apiKeyEnv] : [], models: keyed ? name : undefined }
  })
]

/** The summary of a provider named in `providers.ts`; a name missing here is a programming error. */
export const summaryOf = (name: string): ProviderSummary => {
  const found = providerSummaries.find((provider) => provider.name === name)
  if (found === undefined) throw new Error(`no provider summary for ${name}`)
  return found
}

/** The names `--provider` takes: the providers, and `replay` (answers from a cassette). */
export const providerNames: ReadonlyArray<string> = [...providerSummaries.map((provider) => provider.name), "replay"]

/** Every variable a provider's key is read from at start, each once. */
export const credentialVariables = (): ReadonlyArray<string> => [...new Set(providerSummaries.flatMap((provider) => provider.keyVariables))]
