/**
 * The OpenAI-compatible clouds and local servers by name: where each one's Chat Completions API
 * is, which variable its key is read from, and what it does differently (how a typed answer is
 * asked for). `OpenAiCompatible.preset(name)` is the provider of one; the model registry has their
 * models and prices under the same names (`Models.forProvider`).
 *
 * @example
 * ```ts
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { OpenAiCompatible } from "effect-agent-loop"
 *
 * // the key is read from GROQ_API_KEY
 * const groq = OpenAiCompatible.preset("groq").pipe(Layer.provide(NodeHttpClient.layerUndici))
 * ```
 */
import type { Dialect, MaxTokensField, StructuredOutput } from "./openAiWire.ts"

/** One named server. */
export interface Preset {
  /** Its name, for people. */
  readonly title: string
  /** The root of its Chat Completions API. */
  readonly baseUrl: string
  /** The variable its API key is read from; `undefined` for local servers, which need none. */
  readonly apiKeyEnv: string | undefined
  /**
   * How a typed answer is asked for: `native` (`response_format` json_schema) where the server
   * enforces it for every model, else `tool` (the answer tool, which every tool-calling model has).
   */
  readonly structuredOutput: StructuredOutput
  /** Where its fields differ from OpenAI's. */
  readonly dialect?: Dialect
  /** The output-limit field it documents, where that is not `max_tokens`. */
  readonly maxTokensField?: MaxTokensField
}

/** The presets, by the name `--provider` and `OpenAiCompatible.preset` take. */
export const presets = {
  openrouter: { title: "OpenRouter", baseUrl: "https://openrouter.ai/api/v1", apiKeyEnv: "OPENROUTER_API_KEY", structuredOutput: "tool" },
  groq: { title: "Groq", baseUrl: "https://api.groq.com/openai/v1", apiKeyEnv: "GROQ_API_KEY", structuredOutput: "tool", maxTokensField: "max_completion_tokens" },
  // Mistral refuses fields it does not know (422 "extra_forbidden"), and sends the usage unasked
  mistral: {
    title: "Mistral",
    baseUrl: "https://api.mistral.ai/v1",
    apiKeyEnv: "MISTRAL_API_KEY",
    structuredOutput: "native",
    dialect: { streamOptions: false, seedField: "random_seed", reasoningEffort: false }
  },
  deepseek: { title: "DeepSeek", baseUrl: "https://api.deepseek.com/v1", apiKeyEnv: "DEEPSEEK_API_KEY", structuredOutput: "tool" },
  xai: { title: "xAI", baseUrl: "https://api.x.ai/v1", apiKeyEnv: "XAI_API_KEY", structuredOutput: "native", maxTokensField: "max_completion_tokens" },
  together: { title: "Together AI", baseUrl: "https://api.together.xyz/v1", apiKeyEnv: "TOGETHER_API_KEY", structuredOutput: "tool" },
  fireworks: { title: "Fireworks AI", baseUrl: "https://api.fireworks.ai/inference/v1", apiKeyEnv: "FIREWORKS_API_KEY", structuredOutput: "native" },
  cerebras: { title: "Cerebras", baseUrl: "https://api.cerebras.ai/v1", apiKeyEnv: "CEREBRAS_API_KEY", structuredOutput: "native", maxTokensField: "max_completion_tokens" },
  ollama: { title: "Ollama (local)", baseUrl: "http://localhost:11434/v1", apiKeyEnv: undefined, structuredOutput: "tool" },
  lmstudio: { title: "LM Studio (local)", baseUrl: "http://localhost:1234/v1", apiKeyEnv: undefined, structuredOutput: "tool" },
  vllm: { title: "vLLM (local)", baseUrl: "http://localhost:8000/v1", apiKeyEnv: undefined, structuredOutput: "tool" }
} as const satisfies Record<string, Preset>

/** The name of a preset. */
export type PresetName = keyof typeof presets

/** The preset names, in the table's order. */
export const presetNames = Object.keys(presets) as ReadonlyArray<PresetName>

/**
 * OpenRouter's optional attribution headers: the app's URL and title, shown on openrouter.ai's
 * rankings. Pass them as the provider's `headers`.
 */
export const openRouterAttribution = (app: { readonly url?: string; readonly title?: string }): Record<string, string> => ({
  ...(app.url === undefined ? {} : { "HTTP-Referer": app.url }),
  ...(app.title === undefined ? {} : { "X-Title": app.title })
})
