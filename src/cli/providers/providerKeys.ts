/**
 * The provider API keys: read from the environment once, at start, then removed from
 * `process.env` so that nothing started later (a hook script, `exec`, an MCP server) inherits
 * them; kept `Redacted`, handed to the provider layers explicitly, and registered with `Secrets`
 * so that any text that still carries one (`cat /proc/$PPID/environ` prints the environment the
 * process started with, whatever `process.env` says now) is scrubbed before the model sees it.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { Secrets } from "../../services/Secrets.ts"
import { credentialVariables } from "./providerList.ts"

/** The credentials found at start, by the variable each was read from (`OPENAI_API_KEY`, …). */
export type Keys = Readonly<Record<string, Redacted.Redacted<string>>>

/** The keys, as a service for the commands. */
export class ProviderKeys extends Context.Service<ProviderKeys, Keys>()("effect-agent-loop/cli/ProviderKeys") {}

/**
 * Reads every provider credential (`variables`, default: all the providers' own) from `env` and
 * deletes it there; an empty value counts as none.
 */
export const take = (env: NodeJS.ProcessEnv, variables: ReadonlyArray<string> = credentialVariables()): Keys => {
  const keys: Record<string, Redacted.Redacted<string>> = {}
  for (const variable of variables) {
    const value = env[variable]
    delete env[variable]
    if (value !== undefined && value !== "") keys[variable] = Redacted.make(value)
  }
  return keys
}

/** Registers the keys with the process's `Secrets`, so that every scrub removes them. */
export const register = (keys: Keys): Effect.Effect<void> =>
  Effect.gen(function*() {
    const secrets = yield* Secrets
    secrets.add(Object.values(keys))
  })
