/**
 * The provider API keys: read from the environment once, at start, then removed from
 * `process.env` so that nothing started later (a hook script, `exec`, an MCP server) inherits
 * them; kept `Redacted`, handed to the provider layers explicitly, and registered with `Secrets`
 * so that any text that still carries one (`cat /proc/$PPID/environ` prints the environment the
 * process started with, whatever `process.env` says now) is scrubbed before the model sees it.
 */
import { Context, Effect, Redacted } from "effect"
import { Secrets } from "../services/Secrets.ts"

/** The variable each provider's key is read from. */
export const KEY_VARIABLES = { openai: "OPENAI_API_KEY", anthropic: "ANTHROPIC_API_KEY", gemini: "GEMINI_API_KEY" } as const

/** Variables read, in order, when a provider's own is not set (Google's clients read `GOOGLE_API_KEY` too). */
export const FALLBACK_VARIABLES: { readonly [P in KeyedProvider]?: ReadonlyArray<string> } = { gemini: ["GOOGLE_API_KEY"] }

/** The variables a provider's key may be in, for messages: `GEMINI_API_KEY (or GOOGLE_API_KEY)`. */
export const keyVariablesOf = (provider: KeyedProvider): string =>
  [KEY_VARIABLES[provider], ...(FALLBACK_VARIABLES[provider] ?? [])].join(" (or ") + (FALLBACK_VARIABLES[provider] ? ")" : "")

/** A provider that takes a key. */
export type KeyedProvider = keyof typeof KEY_VARIABLES

/** Whose key a live provider uses: the Responses API takes OpenAI's. */
export const keyOwner = (provider: KeyedProvider | "openai-responses"): KeyedProvider =>
  provider === "openai-responses" ? "openai" : provider

/** The keys found at start, by provider. */
export type Keys = { readonly [P in KeyedProvider]?: Redacted.Redacted<string> }

/** The keys, as a service for the commands. */
export class ProviderKeys extends Context.Service<ProviderKeys, Keys>()("effect-agent-loop/cli/ProviderKeys") {}

/** Reads every provider key from `env` and deletes it there; an empty value counts as none. */
export const take = (env: NodeJS.ProcessEnv): Keys => {
  const keys: { [P in KeyedProvider]?: Redacted.Redacted<string> } = {}
  for (const [provider, variable] of Object.entries(KEY_VARIABLES) as ReadonlyArray<[KeyedProvider, string]>) {
    for (const name of [variable, ...(FALLBACK_VARIABLES[provider] ?? [])]) {
      const value = env[name]
      delete env[name]
      if (value !== undefined && value !== "" && keys[provider] === undefined) keys[provider] = Redacted.make(value)
    }
  }
  return keys
}

/** Registers the keys with the process's `Secrets`, so that every scrub removes them. */
export const register = (keys: Keys): Effect.Effect<void> =>
  Effect.gen(function*() {
    const secrets = yield* Secrets
    secrets.add(Object.values(keys))
  })
