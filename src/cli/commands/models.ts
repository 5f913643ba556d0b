/**
 * `agent-loop models [--provider NAME]`: the built-in model registry, one model per line on
 * stdout, with the date its prices were taken (what it prints is `modelsTable.ts`).
 */
import * as Effect from "effect/Effect"
import { listing } from "../providers/modelsTable.ts"
import { providerSummaries } from "../providers/providerList.ts"
import { fail } from "../terminal/failure.ts"
import { Screen } from "../terminal/screen.ts"

/** Prints the registry, or one provider's part of it. */
export const list = (provider: string | undefined) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const shown = listing(provider)
    if (shown === undefined) {
      return yield* fail(`unknown provider "${provider}"; providers: ${providerSummaries.map((p) => p.name).join(", ")}`)
    }
    for (const line of shown.lines) yield* screen.text(`${line}\n`)
    yield* screen.line(shown.note)
  })
