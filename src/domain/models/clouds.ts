/**
 * The models of the OpenAI-compatible clouds the CLI names (OpenRouter, Groq, Mistral, DeepSeek,
 * xAI, Together, Fireworks, Cerebras), by the ids each one's API takes. Local servers (Ollama,
 * LM Studio, vLLM) serve whatever the user pulled: they have no table, and cost nothing.
 */
import { type Row, table, vendorPrefix } from "./row.ts"

const openrouter: ReadonlyArray<Row> = [
  ["anthropic/claude-opus-4.7", 1_000_000, 128_000, [5, 25, 0.5, 6.25], "ir"],
  ["anthropic/claude-sonnet-4.6", 1_000_000, 128_000, [3, 15, 0.3, 3.75], "ir"],
  ["anthropic/claude-sonnet-4.5", 1_000_000, 64_000, [3, 15, 0.3, 3.75], "ir"],
  ["anthropic/claude-haiku-4.5", 200_000, 64_000, [1, 5, 0.1, 1.25], "ir"],
  ["openai/gpt-5.5", 1_050_000, 128_000, [5, 30, 0.5], "ir"],
  ["openai/gpt-5.4", 1_050_000, 128_000, [2.5, 15, 0.25], "ir"],
  ["openai/gpt-5", 400_000, 128_000, [1.25, 10, 0.125], "ir"],
  ["openai/gpt-5-mini", 400_000, 128_000, [0.25, 2, 0.025], "ir"],
  ["openai/gpt-4.1-mini", 1_047_576, 32_768, [0.4, 1.6, 0.1], "i"],
  ["openai/gpt-oss-120b", 131_072, 4_096, [0.039, 0.18], "r"],
  ["google/gemini-3.1-pro-preview", 1_048_576, 65_536, [2, 12, 0.2, 0.375], "ir"],
  ["google/gemini-3-flash-preview", 1_048_576, 65_536, [0.5, 3, 0.05, 0.083], "ir"],
  ["google/gemini-2.5-pro", 1_048_576, 65_536, [1.25, 10, 0.125, 0.375], "ir"],
  ["google/gemini-2.5-flash", 1_048_576, 65_535, [0.3, 2.5, 0.03, 0.083], "ir"],
  ["deepseek/deepseek-v4-pro", 1_048_576, 384_000, [0.435, 0.87, 0.003625], "r"],
  ["deepseek/deepseek-v4-flash", 1_048_576, 384_000, [0.14, 0.28, 0.0028], "r"],
  ["x-ai/grok-4.3", 1_000_000, 4_096, [1.25, 2.5, 0.2], "ir"],
  ["x-ai/grok-4.1-fast", 2_000_000, 30_000, [0.2, 0.5, 0.05], "ir"],
  ["moonshotai/kimi-k2.6", 262_144, 16_384, [0.75, 3.5, 0.15], "ir"],
  ["qwen/qwen3-coder", 262_144, 65_536, [0.22, 1.8], ""],
  ["z-ai/glm-4.7", 202_752, 4_096, [0.38, 1.74], "r"]
]

const groq: ReadonlyArray<Row> = [
  ["openai/gpt-oss-120b", 131_072, 65_536, [0.15, 0.6], "r"],
  ["openai/gpt-oss-20b", 131_072, 65_536, [0.075, 0.3], "r"],
  ["llama-3.3-70b-versatile", 131_072, 32_768, [0.59, 0.79], ""],
  ["llama-3.1-8b-instant", 131_072, 131_072, [0.05, 0.08], ""],
  ["meta-llama/llama-4-maverick-17b-128e-instruct", 131_072, 8_192, [0.2, 0.6], "i"],
  ["meta-llama/llama-4-scout-17b-16e-instruct", 131_072, 8_192, [0.11, 0.34], "i"],
  ["moonshotai/kimi-k2-instruct-0905", 262_144, 16_384, [1, 3], ""],
  ["qwen/qwen3-32b", 131_072, 40_960, [0.29, 0.59], "r"]
]

const mistral: ReadonlyArray<Row> = [
  ["mistral-large-latest", 262_144, 262_144, [0.5, 1.5], "i", ["mistral-large-2512"]],
  ["mistral-medium-latest", 262_144, 262_144, [1.5, 7.5], "ir", ["mistral-medium-2604"]],
  ["mistral-small-latest", 256_000, 256_000, [0.15, 0.6], "ir", ["mistral-small-2603"]],
  ["magistral-medium-latest", 128_000, 16_384, [2, 5], "r"],
  ["codestral-latest", 256_000, 4_096, [0.3, 0.9], ""],
  ["devstral-medium-latest", 262_144, 262_144, [0.4, 2], ""],
  ["ministral-8b-latest", 128_000, 128_000, [0.1, 0.1], ""],
  ["pixtral-large-latest", 128_000, 128_000, [2, 6], "i"]
]

const deepseek: ReadonlyArray<Row> = [
  ["deepseek-v4-pro", 1_000_000, 384_000, [0.435, 0.87, 0.003625], "r"],
  ["deepseek-v4-flash", 1_000_000, 384_000, [0.14, 0.28, 0.0028], "r"]
]

const xai: ReadonlyArray<Row> = [
  ["grok-4.3", 1_000_000, 30_000, [1.25, 2.5, 0.2], "ir"],
  ["grok-4.20-0309-reasoning", 2_000_000, 30_000, [2, 6, 0.2], "ir"],
  ["grok-4.20-0309-non-reasoning", 2_000_000, 30_000, [2, 6, 0.2], "i"],
  ["grok-4-1-fast", 2_000_000, 30_000, [0.2, 0.5, 0.05], "ir"],
  ["grok-4-1-fast-non-reasoning", 2_000_000, 30_000, [0.2, 0.5, 0.05], "i"],
  ["grok-4", 256_000, 64_000, [3, 15, 0.75], "r"],
  ["grok-code-fast-1", 256_000, 10_000, [0.2, 1.5, 0.02], "r"],
  ["grok-3-mini", 131_072, 8_192, [0.3, 0.5, 0.075], "r"]
]

const together: ReadonlyArray<Row> = [
  ["openai/gpt-oss-120b", 131_072, 32_768, [0.15, 0.6], "r"],
  ["moonshotai/Kimi-K2-Instruct-0905", 262_144, 32_768, [1, 3], ""],
  ["Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8", 262_144, 32_768, [2, 2], ""],
  ["deepseek-ai/DeepSeek-V3.1", 131_072, 32_768, [0.6, 1.7], "r"],
  ["meta-llama/Llama-3.3-70B-Instruct-Turbo", 131_072, 32_768, [0.88, 0.88], ""]
]

const fireworks: ReadonlyArray<Row> = [
  ["accounts/fireworks/models/deepseek-v4-pro", 1_000_000, 384_000, [1.74, 3.48, 0.15], "r"],
  ["accounts/fireworks/models/kimi-k2p6", 262_000, 262_000, [0.95, 4, 0.16], "ir"],
  ["accounts/fireworks/models/glm-5p1", 202_800, 131_072, [1.4, 4.4, 0.26], "r"],
  ["accounts/fireworks/models/minimax-m2p7", 196_608, 196_608, [0.3, 1.2, 0.03], "r"],
  ["accounts/fireworks/models/qwen3p6-plus", 128_000, 8_192, [0.5, 3, 0.1], "ir"],
  ["accounts/fireworks/models/gpt-oss-120b", 131_072, 32_768, [0.15, 0.6], "r"],
  ["accounts/fireworks/models/gpt-oss-20b", 131_072, 32_768, [0.05, 0.2], "r"]
]

const cerebras: ReadonlyArray<Row> = [
  ["gpt-oss-120b", 131_072, 32_768, [0.25, 0.69], "r"],
  ["zai-glm-4.7", 131_072, 40_000, [2.25, 2.75], "r"],
  ["qwen-3-235b-a22b-instruct-2507", 131_000, 32_000, [0.6, 1.2], ""],
  ["llama3.1-8b", 32_000, 8_000, [0.1, 0.1], ""]
]

/** The vendor of a Fireworks or Cerebras id, read from the model's own name. */
const vendorOfName = (id: string): string => {
  const name = id.split("/").at(-1)!.toLowerCase()
  return name.startsWith("gpt-oss") ? "openai" : name.startsWith("llama") ? "meta" : name.startsWith("qwen") ? "qwen" :
    name.startsWith("deepseek") ? "deepseek" : name.startsWith("kimi") ? "moonshot" : name.startsWith("glm") || name.startsWith("zai") ? "z-ai" :
    name.startsWith("minimax") ? "minimax" : "unknown"
}

/** The clouds' models, provider by provider. */
export const models = [
  ...table("openrouter", vendorPrefix, openrouter),
  ...table("groq", (id) => id.includes("/") ? vendorPrefix(id) : vendorOfName(id), groq),
  ...table("mistral", "mistral", mistral),
  ...table("deepseek", "deepseek", deepseek),
  ...table("xai", "xai", xai),
  ...table("together", (id) => vendorPrefix(id.toLowerCase()).replace("deepseek-ai", "deepseek"), together),
  ...table("fireworks", vendorOfName, fireworks),
  ...table("cerebras", vendorOfName, cerebras)
]
