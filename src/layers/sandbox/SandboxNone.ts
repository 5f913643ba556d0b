/**
 * `SandboxNone`: commands run unconfined, as they did before the sandbox existed — the library's
 * default, and the CLI's `--sandbox off` (which warns once per session that commands are not
 * confined).
 *
 * @example
 * ```ts
 * import { SandboxNone } from "effect-agent-loop"
 * const unconfined = SandboxNone.layer
 * ```
 */
import * as Layer from "effect/Layer"
import { none, Sandbox } from "../../services/Sandbox.ts"

/** A `Sandbox` that confines nothing. */
export const layer: Layer.Layer<never> = Layer.sync(Sandbox, none) as Layer.Layer<never>

/** The unconfined sandbox as a value, e.g. to provide with `Effect.provideService(Sandbox, …)`. */
export const make = none
