/**
 * `agent-loop models [--provider NAME]`: the built-in model registry, one model per line on
 * stdout, with the date its prices were taken (the table itself is `modelsTable.ts`).
 */
import * as Effect from "effect/Effect"
import * as Models from "../domain/Models.ts"
import { fail } from "./failure.ts"
import { footer, table } from "./modelsTable.ts"
import { Screen } from "./screen.ts"

/**
 * The models `--provider NAME` serves: the registry's models of the CLI provider's catalogue
 * (`azure` and `openai-responses` serve OpenAI's); `undefined` lists all.
 */
export const modelsOf = (provider: string | undefined) =>
  Effect.gen(function*() {
    if (provider === undefined) return Models.builtinModels
    // the provider table (and its layers) only when a provider is named: the whole list needs none
    const Providers = yield* Effect.promise(() => import("./providers.ts"))
    const entry = Providers.find(provider)
    if (entry === undefined) return yield* fail(`unknown provider "${provider}"; providers: ${Providers.providers.map((p) => p.name).join(", ")}`)
    return entry.models === undefined ? [] : Models.forProvider(entry.models)
  })

/** Prints the registry, or one provider's part of it. */
export const list = (provider: string | undefined) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const models = yield* modelsOf(provider)
    if (models.length === 0) {
      yield* screen.line(`${provider} serves the models its server has: the registry lists none for it`)
      return
    }
    for (const line of table(models)) yield* screen.text(`${line}\n`)
    yield* screen.line(footer())
  })
