/**
 * `SandboxAuto`: the sandbox of this platform, on wherever it can run — bubblewrap on Linux,
 * `sandbox-exec` on macOS. Where none can run (no bubblewrap, user namespaces off, another
 * platform) commands run unconfined, and `status` says why and what fixes it, so the host can warn;
 * with `failIfUnavailable` they fail instead, each with that one line (the CLI's `--sandbox on`).
 *
 * Building the layer probes the platform's sandbox once (about as long as one command takes).
 *
 * @example
 * ```ts
 * import { Layer } from "effect"
 * import { NodeServices } from "@effect/platform-node"
 * import { SandboxAuto } from "effect-agent-loop"
 *
 * const sandbox = SandboxAuto.layer({ allowedHosts: ["registry.npmjs.org"] }).pipe(Layer.provide(NodeServices.layer))
 * ```
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import type * as Scope from "effect/Scope"
import { none, Sandbox, SandboxError, type SandboxShape, type SandboxStatus } from "../../services/Sandbox.ts"
import { OFF_FIX } from "./internal.ts"
import * as SandboxLinux from "./SandboxLinux.ts"
import * as SandboxMacos from "./SandboxMacos.ts"

/** The options of both platforms' sandboxes, and what to do where none can run. */
export interface AutoOptions extends SandboxLinux.LinuxOptions, SandboxMacos.MacosOptions {
  /** Fail every command where no sandbox can run, instead of running it unconfined. Default false. */
  readonly failIfUnavailable?: boolean
  /** The platform to choose for; default this process's. */
  readonly platform?: string
}

/** Unconfined commands, with the status of the sandbox that could not run (or a refusal of each, when it must). */
const without = (status: SandboxStatus, fail: boolean): SandboxShape => ({
  ...none(),
  status: Effect.succeed(status),
  ...(fail
    ? { wrap: () => Effect.fail(new SandboxError({ reason: "Unavailable", message: `The sandbox cannot start: ${status.reason}; ${status.fix}` })) }
    : {})
})

/** The platform's sandbox when it runs; otherwise as `AutoOptions.failIfUnavailable` says. */
export const make = (options: AutoOptions = {}): Effect.Effect<SandboxShape, never, Scope.Scope | ChildProcessSpawner.ChildProcessSpawner> =>
  Effect.gen(function*() {
    const platform = options.platform ?? process.platform
    const fail = options.failIfUnavailable ?? false
    if (platform !== "linux" && platform !== "darwin") {
      return without({
        kind: "none",
        available: false,
        reason: `no sandbox runs on ${platform} (only Linux, with bubblewrap, and macOS)`,
        fix: `run on Linux or macOS, ${OFF_FIX}`
      }, fail)
    }
    const sandbox = platform === "linux" ? yield* SandboxLinux.make(options) : yield* SandboxMacos.make(options)
    const status = yield* sandbox.status
    return status.available || fail ? sandbox : without(status, false)
  })

/** `make` as a layer (needs a `ChildProcessSpawner`: `NodeServices.layer`). */
export const layer = (options: AutoOptions = {}): Layer.Layer<never, never, ChildProcessSpawner.ChildProcessSpawner> =>
  Layer.effect(Sandbox, make(options)) as Layer.Layer<never, never, ChildProcessSpawner.ChildProcessSpawner>
