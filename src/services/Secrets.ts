/**
 * `Secrets`: the values that must never leave the process in clear — API keys, tokens from MCP
 * server environments, anything a host marks secret — and the one function that removes them
 * from text.
 *
 * Whatever a tool, a hook, a server or a model produces may echo a secret (`cat /proc/$PPID/environ`,
 * an error body quoting a header, a hook's stderr). Every text that enters the conversation, an
 * event, an error, a session or a cassette goes through `scrub` first, so a secret that is known
 * here cannot reach any of them.
 *
 * The service is a `Context.Reference`: without a layer, every part of a program shares one
 * registry for the process, so a provider layer that registers its key protects the loop that
 * uses it without any wiring. `SecretsLive.layer` gives a program (or a test) its own registry.
 *
 * @example
 * ```ts
 * import { Effect, Redacted } from "effect"
 * import { Secrets } from "effect-agent-loop"
 *
 * const program = Effect.gen(function*() {
 *   const secrets = yield* Secrets
 *   secrets.add([Redacted.make(process.env.MY_TOKEN ?? "")])
 *   console.log(secrets.scrub(`token=${process.env.MY_TOKEN}`)) // token=<redacted>
 * })
 * ```
 */
import * as Context from "effect/Context"
import * as Redacted from "effect/Redacted"
import { urlCredentials } from "../domain/urlCredentials.ts"

/** What a secret is replaced with. */
export const REDACTED = "<redacted>"

/**
 * Values shorter than this are not registered: replacing a two-letter "secret" everywhere would
 * mangle ordinary text, and real keys and tokens are far longer.
 */
export const MIN_SECRET_LENGTH = 8

/** The registry. */
export interface SecretsShape {
  /**
   * Remembers secret values (empty and too-short ones are ignored); later `scrub`s remove them. A
   * value holding a URL with a credential (`redis://:PASSWORD@host`, `https://TOKEN@host`) also
   * adds that credential on its own, as written and decoded: it may show up without the rest.
   */
  readonly add: (secrets: ReadonlyArray<Redacted.Redacted<string> | string>) => void
  /** `text` with every known secret replaced by `<redacted>`. */
  readonly scrub: (text: string) => string
  /** How many distinct secrets are known. */
  readonly size: () => number
}

/** A fresh, empty registry. */
export const make = (): SecretsShape => {
  const values = new Set<string>()
  // Longest first, so a secret that contains another is replaced whole.
  let ordered: ReadonlyArray<string> = []
  return {
    add: (secrets) => {
      let changed = false
      const remember = (value: string) => {
        if (value.length >= MIN_SECRET_LENGTH && !values.has(value)) {
          values.add(value)
          changed = true
        }
      }
      for (const secret of secrets) {
        const value = typeof secret === "string" ? secret : Redacted.value(secret)
        remember(value)
        for (const credential of urlCredentials(value)) remember(credential)
      }
      if (changed) ordered = [...values].sort((a, b) => b.length - a.length)
    },
    scrub: (text) => {
      let out = text
      for (const value of ordered) if (out.includes(value)) out = out.split(value).join(REDACTED)
      return out
    },
    size: () => values.size
  }
}

/**
 * The secrets registry; defaults to one registry shared by the whole process
 * (`SecretsLive.layer` gives a program its own).
 */
export class Secrets extends Context.Reference<SecretsShape>("effect-agent-loop/Secrets", {
  defaultValue: make
}) {}
