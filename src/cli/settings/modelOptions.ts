/**
 * The model options of `run` and `chat`: the sampling and reasoning flags over the settings'
 * `modelOptions`, checked up front so that a bad value, or one the chosen API refuses, fails with
 * one line naming the flag before any request is sent.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as AgentLoopConfig from "../../domain/Config.ts"
import { merge, type ModelOptions } from "../../domain/ModelOptions.ts"
import type { ProviderError } from "../../domain/errors.ts"
import type { ProviderRequest } from "../../domain/Provider.ts"
import { fail } from "../terminal/failure.ts"
import type { AgentFlags } from "./flags.ts"

/** The flag of each option, for error lines. */
const flagOf: Readonly<Record<string, string>> = {
  temperature: "--temperature",
  topP: "--top-p",
  stop: "--stop",
  seed: "--seed",
  maxTokens: "--max-tokens",
  "reasoning.effort": "--reasoning-effort",
  "reasoning.budgetTokens": "--thinking-budget"
}

/** The options the flags set; absent flags are left out. */
const fromFlags = (flags: AgentFlags): Record<string, unknown> => {
  const value = <A>(option: Option.Option<A>) => Option.getOrUndefined(option)
  const reasoning = { effort: value(flags.reasoningEffort), budgetTokens: value(flags.thinkingBudget) }
  const entries = Object.entries({
    temperature: value(flags.temperature),
    topP: value(flags.topP),
    stop: flags.stop.length > 0 ? flags.stop : undefined,
    seed: value(flags.seed),
    maxTokens: value(flags.maxTokens),
    reasoning: reasoning.effort === undefined && reasoning.budgetTokens === undefined
      ? undefined
      : Object.fromEntries(Object.entries(reasoning).filter(([, v]) => v !== undefined))
  })
  return Object.fromEntries(entries.filter(([, v]) => v !== undefined))
}

/**
 * The flags' options over the settings'; `maxTokens` is the output limit the model registry gives
 * when neither sets one (the chosen provider's own `check` sees it, as its requests will).
 */
export const resolve = (
  flags: AgentFlags,
  settings: ModelOptions | undefined,
  check: ((request: ProviderRequest) => ProviderError | undefined) | undefined,
  registryMaxTokens: number | undefined
) =>
  Effect.gen(function*() {
    const checked = AgentLoopConfig.checkModelOptions(fromFlags(flags))
    if (Result.isFailure(checked)) {
      const { field, message } = checked.failure
      const flag = flagOf[field.replace(/\.\d+$/, "")] ?? field
      return yield* fail(`${flag}: ${message.replace(/^Invalid model option [^:]*: /, "")}`)
    }
    const options = merge(settings, checked.success)
    const maxTokens = options?.maxTokens ?? registryMaxTokens
    const request = { model: "", messages: [], tools: [], ...options, ...(maxTokens === undefined ? {} : { maxTokens }) }
    const refused = check?.(request)
    if (refused !== undefined) return yield* fail(refused.message)
    return options
  })
