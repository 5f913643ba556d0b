/**
 * Models on Amazon Bedrock (the Converse API), by their Bedrock ids; the cross-region inference
 * profiles (`us.`, `eu.`, `global.`) of a model are its aliases. On-demand prices in US regions.
 */
import { type Row, table, vendorPrefix } from "./row.ts"

const profiles = (id: string, regions: ReadonlyArray<string> = ["us", "eu", "global"]) => regions.map((region) => `${region}.${id}`)

const claude = (id: string, contextWindow: number, maxOutputTokens: number, input: number, output: number, regions?: ReadonlyArray<string>): Row => [
  id,
  contextWindow,
  maxOutputTokens,
  [input, output, input / 10, input * 1.25],
  "ir",
  profiles(id, regions)
]

const rows: ReadonlyArray<Row> = [
  claude("anthropic.claude-opus-4-7", 1_000_000, 128_000, 5, 25),
  claude("anthropic.claude-opus-4-6-v1", 1_000_000, 128_000, 5, 25),
  claude("anthropic.claude-opus-4-5-20251101-v1:0", 200_000, 64_000, 5, 25),
  claude("anthropic.claude-opus-4-1-20250805-v1:0", 200_000, 32_000, 15, 75, ["us"]),
  claude("anthropic.claude-sonnet-4-6", 1_000_000, 64_000, 3, 15),
  claude("anthropic.claude-sonnet-4-5-20250929-v1:0", 200_000, 64_000, 3, 15),
  claude("anthropic.claude-sonnet-4-20250514-v1:0", 200_000, 64_000, 3, 15),
  claude("anthropic.claude-haiku-4-5-20251001-v1:0", 200_000, 64_000, 1, 5),
  ["amazon.nova-premier-v1:0", 1_000_000, 16_384, [2.5, 12.5], "ir", profiles("amazon.nova-premier-v1:0", ["us"])],
  ["amazon.nova-pro-v1:0", 300_000, 8_192, [0.8, 3.2, 0.2], "i", profiles("amazon.nova-pro-v1:0", ["us", "eu"])],
  ["amazon.nova-lite-v1:0", 300_000, 8_192, [0.06, 0.24, 0.015], "i", profiles("amazon.nova-lite-v1:0", ["us", "eu"])],
  ["amazon.nova-micro-v1:0", 128_000, 8_192, [0.035, 0.14, 0.00875], "", profiles("amazon.nova-micro-v1:0", ["us", "eu"])],
  ["meta.llama4-maverick-17b-instruct-v1:0", 1_000_000, 16_384, [0.24, 0.97], "i", profiles("meta.llama4-maverick-17b-instruct-v1:0", ["us"])],
  ["meta.llama4-scout-17b-instruct-v1:0", 3_500_000, 16_384, [0.17, 0.66], "i", profiles("meta.llama4-scout-17b-instruct-v1:0", ["us"])],
  ["meta.llama3-3-70b-instruct-v1:0", 128_000, 4_096, [0.72, 0.72], "", profiles("meta.llama3-3-70b-instruct-v1:0", ["us"])],
  ["deepseek.v3.2", 163_840, 81_920, [0.62, 1.85], "r"],
  ["deepseek.r1-v1:0", 128_000, 32_768, [1.35, 5.4], "r", profiles("deepseek.r1-v1:0", ["us"])],
  ["openai.gpt-oss-120b-1:0", 128_000, 4_096, [0.15, 0.6], "r"],
  ["openai.gpt-oss-20b-1:0", 128_000, 4_096, [0.07, 0.3], "r"],
  ["mistral.mistral-large-3-675b-instruct", 256_000, 8_192, [0.5, 1.5], "i"],
  ["qwen.qwen3-coder-480b-a35b-v1:0", 131_072, 65_536, [0.22, 1.8], ""],
  ["moonshotai.kimi-k2.5", 256_000, 256_000, [0.6, 3], "ir"]
]

/** Bedrock's models. */
export const models = table("bedrock", vendorPrefix, rows)
