/**
 * Which provider, model and key the flags, the environment and the settings choose, and what the
 * model registry says about that model (context window, output limit, prices). Part of resolving
 * the settings of `run` and `chat` (`settings.ts`): a provider that cannot be reached as given
 * fails here with one line, before any request.
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as AgentLoopConfig from "../../domain/Config.ts"
import * as Models from "../../domain/Models.ts"
import { withThousands } from "../../domain/text.ts"
import { originOf } from "../../layers/providers/ownHosts.ts"
import { readCassette } from "../../layers/providers/Replay.ts"
import { Secrets } from "../../services/Secrets.ts"
import type * as SettingsFile from "../config/settingsFile.ts"
import { ProviderKeys } from "../providers/providerKeys.ts"
import * as Providers from "../providers/providers.ts"
import type { Connection } from "../providers/providers.ts"
import { type CliFailure, fail } from "../terminal/failure.ts"
import type { AgentFlags } from "./flags.ts"

/** Which provider (a row of `providers.ts`), and how to reach it. */
export type ProviderSettings =
  | ({ readonly _tag: "live"; readonly name: string; /** A key held back from the URL, said once at start. */ readonly note?: string } & Connection)
  | { readonly _tag: "replay"; readonly cassette: string }

/** The loop's own defaults (any model will do), for what the registry cannot say about a model. */
const loopDefaults = AgentLoopConfig.makeUnsafe({ model: "any" })

/**
 * Claude Code's `apiKeyHelper`, run only when the `anthropic` provider has no key of its own
 * variables (nor `--api-key-env`); its key goes wherever the provider's URL points, as a named one does.
 */
export type KeyHelper = Effect.Effect<Redacted.Redacted<string> | undefined, CliFailure>

/**
 * The key of a provider: from the variable `--api-key-env` or the settings' `apiKeyEnv` names
 * (taken out of `env` like the built-in ones, and scrubbed from every text), else from the first
 * of its own variables that was set at start. `variable` is the one read, for the line saying it
 * is missing; `named` says the key was named explicitly, so it may go to any URL.
 */
const providerKey = (
  entry: Providers.CliProvider,
  flags: AgentFlags,
  settings: SettingsFile.Settings,
  env: NodeJS.ProcessEnv,
  keyHelper: KeyHelper | undefined
) =>
  Effect.gen(function*() {
    const keys = yield* ProviderKeys
    const flagged = Option.getOrUndefined(flags.apiKeyEnv)
    const named = flagged ?? settings.apiKeyEnv
    if (named !== undefined) {
      const value = env[named]
      delete env[named]
      // a provider's own variable was taken out of the environment at start
      const apiKey = keys[named] ?? (value === undefined || value === "" ? undefined : Redacted.make(value))
      if (apiKey !== undefined) (yield* Secrets).add([apiKey])
      const variable = flagged === undefined ? `${named} (the settings' "apiKeyEnv")` : `${named} (--api-key-env)`
      return { apiKey, keyVariable: named, variable, named: true }
    }
    const found = entry.keyVariables.find((variable) => keys[variable] !== undefined)
    // Claude Code's apiKeyHelper makes an Anthropic key, used when none is set; the user configured it
    // for where ANTHROPIC's URL points (a gateway, often), so it goes there as a named key does
    const helped = found === undefined && entry.name === "anthropic" && keyHelper !== undefined ? yield* keyHelper : undefined
    if (helped !== undefined) return { apiKey: helped, keyVariable: undefined, variable: "the settings' apiKeyHelper", named: true }
    return { apiKey: found === undefined ? undefined : keys[found], keyVariable: found, variable: entry.keyVariables.join(" or "), named: false }
  })

/**
 * The line saying a key of the provider's own variables (or its Application Default Credentials)
 * is not sent to `url` (given by a flag or the settings), which is not the provider's own host;
 * `undefined` when it may go there, or there is none. The URL of the environment
 * (`AZURE_OPENAI_ENDPOINT`) goes with the key of the environment.
 */
const withheldNote = (
  entry: Providers.CliProvider,
  key: { readonly apiKey: unknown; readonly keyVariable: string | undefined; readonly named: boolean },
  url: string | undefined
) => {
  if (key.named || url === undefined || entry.ownHost === undefined || entry.ownHost(url)) return undefined
  const where = `${originOf(url)}, which is not the provider's own host`
  if (key.apiKey !== undefined && key.keyVariable !== undefined) return `${key.keyVariable} is set but not sent to ${where}: --api-key-env ${key.keyVariable} sends it`
  const credentials = entry.credentialsVariable
  return credentials === undefined
    ? undefined
    : `Application Default Credentials are not sent to ${where}: --api-key-env ${credentials} sends those of its file`
}

/**
 * The provider, its URL and its key. A provider on its vendor's URL without the key it needs fails
 * here, before any request; a key of its own variables is held back from a URL elsewhere (`note`
 * says so; a provider that requires one fails).
 */
export const provider = (flags: AgentFlags, settings: SettingsFile.Settings, env: NodeJS.ProcessEnv, keyHelper?: KeyHelper) =>
  Effect.gen(function*() {
    const named = Option.getOrUndefined(flags.provider)
    const cassette = Option.getOrUndefined(flags.replay)
    if (cassette !== undefined && Option.isSome(flags.record)) return yield* fail("--record and --replay cannot be used together")
    if (cassette !== undefined) {
      if (named !== undefined && named !== "replay") return yield* fail(`--replay answers from a cassette, but --provider is ${named}`)
      return { _tag: "replay", cassette: nodePath.resolve(cassette) } as const
    }
    if (named === "replay") return yield* fail("--provider replay needs a cassette: --replay FILE")
    const name = named ?? settings.provider ?? "openai"
    const entry = Providers.find(name)
    if (entry === undefined) return yield* fail(`unknown provider "${name}"; providers: ${Providers.providerNames.join(", ")}`)
    const givenUrl = Option.getOrUndefined(flags.baseUrl) ?? settings.baseUrl
    const baseUrl = givenUrl ?? (entry.baseUrlVariable === undefined ? undefined : nonEmpty(env[entry.baseUrlVariable]))
    if (baseUrl === undefined && entry.baseUrlRequired === true) {
      return yield* fail(
        `--provider ${name} needs its URL: pass --base-url, set "baseUrl" in a settings file${
          entry.baseUrlVariable === undefined ? "" : `, or export ${entry.baseUrlVariable}`
        }`
      )
    }
    const key = yield* providerKey(entry, flags, settings, env, keyHelper)
    const note = withheldNote(entry, key, givenUrl)
    if (note !== undefined && entry.key === "required") return yield* fail(note)
    const apiKey = note === undefined ? key.apiKey : undefined
    const variable = key.variable
    if (apiKey === undefined && note === undefined && variable !== "" && (entry.key === "required" || (entry.key === "unless-base-url" && baseUrl === undefined))) {
      return yield* fail(`${variable} is not set: export it${entry.key === "required" ? "" : ", or pass --base-url for a server that needs no key"}`)
    }
    const connection: Connection = {
      baseUrl,
      apiKey,
      keyVariable: note === undefined ? key.keyVariable : undefined,
      headers: settings.headers,
      secrets: { ...yield* ProviderKeys, ...yield* takeSecrets(entry.secretVariables ?? [], env) },
      region: settings.region ?? nonEmpty(env["AWS_REGION"]) ?? nonEmpty(env["AWS_DEFAULT_REGION"]),
      apiVersion: settings.apiVersion ?? nonEmpty(env["OPENAI_API_VERSION"]),
      project: Option.getOrUndefined(flags.project) ?? nonEmpty(env["GOOGLE_CLOUD_PROJECT"]) ?? settings.project,
      location: Option.getOrUndefined(flags.location) ?? nonEmpty(env["GOOGLE_CLOUD_LOCATION"]) ?? settings.location
    }
    const wanting = entry.requires?.(connection)
    if (wanting !== undefined) return yield* fail(wanting)
    return { _tag: "live", name, ...connection, ...(note === undefined ? {} : { note }) } as const
  })

/** Takes `variables` out of `env` (so nothing started later inherits them) and registers them with `Secrets`. */
const takeSecrets = (variables: ReadonlyArray<string>, env: NodeJS.ProcessEnv) =>
  Effect.gen(function*() {
    const taken: Record<string, Redacted.Redacted<string>> = {}
    for (const variable of variables) {
      const value = env[variable]
      delete env[variable]
      if (value !== undefined && value !== "") taken[variable] = Redacted.make(value)
    }
    // the access key id is no secret, but scrubbing it too costs nothing
    (yield* Secrets).add(Object.values(taken))
    return taken
  })

const nonEmpty = (value: string | undefined) => value === undefined || value === "" ? undefined : value

/** The model: `--model`, a cassette's first request, the settings' `model`; none fails with one line. */
export const model = (flags: AgentFlags, chosen: ProviderSettings, settings: SettingsFile.Settings) =>
  Effect.gen(function*() {
    if (Option.isSome(flags.model)) return flags.model.value
    if (chosen._tag === "replay") {
      const entries = yield* readCassette(chosen.cassette).pipe(Effect.catch((error) => fail(error.message)))
      const first = entries[0]
      if (first !== undefined) return first.request.model
      return yield* fail(`cassette ${chosen.cassette} is empty`)
    }
    if (settings.model !== undefined) return settings.model
    return yield* fail("no model: pass --model NAME, set AGENT_LOOP_MODEL, or add \"model\" to a settings file")
  })

/**
 * What the registry and the settings say about the model: window, output limit, prices; and a
 * note if it is not known. The model is looked up among its provider's models first, whose
 * prices win (one id can cost differently on two clouds), then among all.
 */
export const modelLimits = (name: string, chosen: ProviderSettings, settings: SettingsFile.Settings) => {
  const entry = chosen._tag === "live" ? Providers.find(chosen.name) : undefined
  const own = entry?.models === undefined ? [] : Models.forProvider(entry.models)
  const info = Models.lookup(name, own) ?? Models.lookup(name)
  const price = settings.prices?.[name] ?? info?.price
  const prices = price === undefined
    ? undefined
    : { ...Models.priceTable(), ...Models.priceTable(own), ...settings.prices, [name]: price }
  const note = info !== undefined || chosen._tag === "replay"
    ? undefined
    : `model "${name}" is not in the built-in registry (agent-loop models lists it): a ${
      withThousands(loopDefaults.contextWindow)
    }-token context window is assumed${price === undefined ? ", and its cost is unknown (settings \"prices\" can give it)" : ""}`
  return {
    contextWindow: info?.contextWindow,
    // APIs that require a limit are sent the model's own; the others default to the model's maximum
    maxTokens: entry?.needsMaxTokens === true || (typeof entry?.needsMaxTokens === "function" && entry.needsMaxTokens(name))
      ? info?.maxOutputTokens
      : undefined,
    prices,
    note
  }
}
