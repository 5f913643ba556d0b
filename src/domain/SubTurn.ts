/**
 * Sub-turn configuration (DESIGN §7).
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { DurationSetting } from "./Config.ts"
import { ModelOptions } from "./ModelOptions.ts"

/** What `spawnSubTurn` takes. Only `model` and `task` are required. */
export const SubTurnConfig = Schema.Struct({
  model: Schema.NonEmptyString,
  /** The task; sent as the sub-turn's first user message. */
  task: Schema.String,
  /** A system prompt for the sub-turn, if any. */
  systemPrompt: Schema.optionalKey(Schema.String),
  /**
   * Names of the tools the sub-turn may use, among its parent's (it can only narrow); `[]` offers
   * none, as `TurnOptions.tools` does. Absent: the parent's tools.
   */
  tools: Schema.optionalKey(Schema.Array(Schema.String)),
  /** Model options over the parent turn's, which the sub-turn inherits field by field (its output limit is `maxTokens` here). */
  modelOptions: Schema.optionalKey(ModelOptions),
  async: Schema.Boolean.pipe(Schema.withDecodingDefaultKey(Effect.succeed(false))),
  critical: Schema.Boolean.pipe(Schema.withDecodingDefaultKey(Effect.succeed(false))),
  timeout: Schema.optionalKey(DurationSetting),
  /** 0: 75% of the model's context window; -1: no limit; > 0: that many runes. */
  maxContextRunes: Schema.Int.pipe(Schema.withDecodingDefaultKey(Effect.succeed(0)))
})
export type SubTurnConfig = typeof SubTurnConfig.Type
export type SubTurnConfigInput = typeof SubTurnConfig.Encoded
