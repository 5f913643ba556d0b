/**
 * The built-in models and the day their prices were taken, as plain data: `Models.ts` gives them
 * their Schema and lookups, and the CLI's `models` listing reads them from here without loading
 * Effect (`cli/quick.ts`).
 */
import type { ModelInfo } from "../Models.ts"
import { models as anthropic } from "./anthropic.ts"
import { models as bedrock } from "./bedrock.ts"
import { models as clouds } from "./clouds.ts"
import { models as google } from "./google.ts"
import { models as openai } from "./openai.ts"

/** The day the built-in prices and limits were taken. */
export const PRICES_AS_OF = "2026-05-08"

/**
 * The built-in models: one table per provider, newest families first. A provider adds its models
 * as one more table here.
 */
export const builtinModels: ReadonlyArray<ModelInfo> = [...openai, ...anthropic, ...google, ...bedrock, ...clouds]

/** The built-in models `provider`'s API serves (`openai`, `anthropic`, `bedrock`, `groq`, …). */
export const forProvider = (provider: string, models: ReadonlyArray<ModelInfo> = builtinModels): ReadonlyArray<ModelInfo> =>
  models.filter((model) => model.provider === provider)
