/**
 * The `AgentLoopConfig` namespace of the public API (`index.ts`): the names of `domain/Config.ts`
 * users need, listed by name; the loop's own checks and resolutions of its fields stay internal.
 */
export {
  type AgentLoopConfig,
  type AgentLoopConfigInput,
  AgentLoopConfigSchema,
  DurationSetting,
  make,
  makeUnsafe,
  RetryPolicy,
  SubTurnLimits
} from "../domain/Config.ts"
