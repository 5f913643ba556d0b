/**
 * A `Secrets` registry of a program's (or a test's) own, instead of the one the process shares.
 */
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import { make, Secrets } from "../services/Secrets.ts"

/** A registry of its own, seeded with `secrets`. */
export const layer = (secrets: ReadonlyArray<Redacted.Redacted<string> | string> = []): Layer.Layer<never> =>
  Layer.sync(Secrets, () => {
    const registry = make()
    registry.add(secrets)
    return registry
  }) as Layer.Layer<never>
