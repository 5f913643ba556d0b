/**
 * The sandbox of a CLI run (`run`, `chat`, `serve`): by default the one of this platform —
 * bubblewrap on Linux, `sandbox-exec` on macOS — under the policy the settings and rules compile
 * to (`sandboxPolicy.ts`); `SandboxNone` with `--sandbox off` (or `sandbox.enabled: false`), and
 * where no sandbox runs (a warning says so, `settings.ts`). The platform's sandbox fails closed:
 * when it cannot start (no bubblewrap, user namespaces off), `exec` refuses every command with one
 * line naming the fix. With `--sandbox on` (or `sandbox.failIfUnavailable`) a platform without one
 * refuses every command too, so nothing runs unconfined. Each module is loaded only when chosen.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import * as SandboxNone from "../../layers/sandbox/SandboxNone.ts"
import { type SandboxChoice, sandboxPlatform } from "../config/sandboxSettings.ts"
import type { SandboxInputs } from "./sandboxPolicy.ts"

/** What the layer is built from. */
export interface SandboxLayerOptions {
  readonly sandbox: SandboxChoice
  /** `undefined` when nothing runs in the sandbox (no `exec`, no confined servers or hooks). */
  readonly inputs: SandboxInputs | undefined
  /** More protected locations, relative to the workspace (the CLI's own directories inside it). */
  readonly protect?: ReadonlyArray<string>
  readonly platform?: NodeJS.Platform
}

/** The sandbox layer of a run. */
export const layer = (options: SandboxLayerOptions): Layer.Layer<never, never, ChildProcessSpawner.ChildProcessSpawner> => {
  const { inputs, sandbox } = options
  const platform = options.platform ?? process.platform
  if (sandbox.mode === "off" || inputs === undefined) return SandboxNone.layer
  const kind = sandboxPlatform(platform)
  // where none runs: unconfined (a warning said so), or under --sandbox on every command refused with the reason
  if (kind === undefined) {
    if (sandbox.mode === "auto") return SandboxNone.layer
    return Layer.unwrap(Effect.map(Effect.promise(() => import("../../layers/sandbox/SandboxAuto.ts")), (m) => m.layer({ platform, failIfUnavailable: true })))
  }
  const policy = {
    allowWrite: inputs.allowWrite,
    denyWrite: inputs.denyWrite,
    denyRead: inputs.denyRead,
    allowedHosts: inputs.allowedHosts,
    protect: options.protect ?? []
  }
  // the platform's own sandbox, which fails closed when it cannot start (SandboxAuto would run commands unconfined then)
  return kind === "linux"
    ? Layer.unwrap(Effect.map(Effect.promise(() => import("../../layers/sandbox/SandboxLinux.ts")), (m) => m.layer(policy)))
    : Layer.unwrap(Effect.map(Effect.promise(() => import("../../layers/sandbox/SandboxMacos.ts")), (m) => m.layer(policy)))
}
