/**
 * The sandbox of a CLI run (`run`, `chat`, `serve`): by default the one of this platform —
 * bubblewrap on Linux, `sandbox-exec` on macOS — under the policy the settings and rules compile
 * to (`sandboxPolicy.ts`); `SandboxNone` with `--sandbox off` (or `sandbox.enabled: false`), and
 * where no sandbox runs (a warning says so, `settings.ts`). With `--sandbox on` (or
 * `sandbox.failIfUnavailable`) a platform without one gets a sandbox that refuses every command,
 * so nothing runs unconfined. Each platform's module is loaded only when it is chosen.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import * as SandboxNone from "../layers/sandbox/SandboxNone.ts"
import { Sandbox, SandboxError, type SandboxShape, type SandboxStatus } from "../services/Sandbox.ts"
import type { SandboxInputs } from "./sandboxPolicy.ts"
import { type SandboxChoice, sandboxPlatform } from "./sandboxSettings.ts"

/** What the layer is built from. */
export interface SandboxLayerOptions {
  readonly sandbox: SandboxChoice
  /** `undefined` when nothing runs in the sandbox (no `exec`, no confined servers or hooks). */
  readonly inputs: SandboxInputs | undefined
  /** More protected locations, relative to the workspace (the CLI's own directories inside it). */
  readonly protect?: ReadonlyArray<string>
  readonly platform?: NodeJS.Platform
}

/** A sandbox for a platform that has none, under `--sandbox on`: every command is refused, saying why. */
export const refusing = (platform: NodeJS.Platform): SandboxShape => {
  const status: SandboxStatus = {
    kind: "none",
    available: false,
    reason: `no sandbox runs on ${platform} (only Linux, with bubblewrap, and macOS)`,
    fix: "run without it: --sandbox off (settings: sandbox.enabled: false)"
  }
  return {
    ...SandboxNone.make(),
    status: Effect.succeed(status),
    wrap: () => Effect.fail(new SandboxError({ reason: "Unavailable", message: `The sandbox cannot start: ${status.reason}; ${status.fix}` }))
  }
}

/** The sandbox layer of a run. */
export const layer = (options: SandboxLayerOptions): Layer.Layer<never, never, ChildProcessSpawner.ChildProcessSpawner> => {
  const { inputs, sandbox } = options
  const platform = options.platform ?? process.platform
  if (sandbox.mode === "off" || inputs === undefined) return SandboxNone.layer
  // macOS's sandbox-exec layer is chosen here once the library has it; until then macOS is as a platform without one
  const kind = sandboxPlatform(platform)
  if (kind !== "linux") return sandbox.mode === "on" ? Layer.succeed(Sandbox, refusing(platform)) as Layer.Layer<never> : SandboxNone.layer
  const policy = {
    allowWrite: inputs.allowWrite,
    denyWrite: inputs.denyWrite,
    denyRead: inputs.denyRead,
    allowedHosts: inputs.allowedHosts,
    protect: options.protect ?? []
  }
  return Layer.unwrap(Effect.map(Effect.promise(() => import("../layers/sandbox/SandboxLinux.ts")), (m) => m.layer(policy)))
}
