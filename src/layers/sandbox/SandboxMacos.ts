/**
 * `SandboxMacos`: commands confined by macOS's `sandbox-exec` under a Seatbelt profile compiled
 * from the same policy as on Linux (`policy.ts`).
 *
 * NOT TESTED ON macOS: the project's machines run Linux. The profile is written from Apple's
 * Seatbelt rules as other tools use them (later rules override earlier ones; paths are real
 * paths, `/tmp` is `/private/tmp`) and `profile` is tested as text only; check it on a Mac before
 * relying on it. What it does, where Seatbelt allows it:
 *
 * - writes only the workspace, git's directories, the allowed paths and the session's temporary
 *   directory (`TMPDIR`); the protected locations, git's hooks and config are denied even before
 *   they exist (Seatbelt matches paths, not mounts); credentials are unreadable;
 * - no network but the loop's proxy, which listens on a loopback port (no network namespace on
 *   macOS, so no bridge); no Unix sockets outside the temporary directory (docker's, ssh-agent's);
 * - signals only to processes of the same sandbox.
 *
 * Unlike Linux there is no private `/tmp`, no pid namespace (`ps` shows the user's processes, but
 * another process's environment needs the same sandbox) and no minimal `/dev`.
 */
import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { isSecretEnv } from "../../tools/exec.ts"
import { Sandbox, SandboxError, type SandboxShape, type SandboxStatus } from "../../services/Sandbox.ts"
import { Secrets } from "../../services/Secrets.ts"
import type * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import { denialOf, gitKey, gitLayout, kindOf, OFF_FIX } from "./internal.ts"
import { compile, type GitLayout, type Policy, userDirsOf } from "./policy.ts"
import * as Proxy from "./proxy.ts"
import type { LinuxOptions } from "./SandboxLinux.ts"

/** The macOS sandbox's options: the Linux ones, `sandbox-exec` in place of `bwrap`. */
export interface MacosOptions extends Omit<LinuxOptions, "bwrap" | "node"> {
  /** `sandbox-exec`'s path; default `/usr/bin/sandbox-exec`. */
  readonly sandboxExec?: string
}

/** A string in a Seatbelt profile. */
const quote = (text: string) => `"${text.replaceAll("\\", "\\\\").replaceAll("\"", "\\\"")}"`

const real = (path: string): string => {
  try {
    return nodeFs.realpathSync(path)
  } catch {
    // a path that does not exist yet: its parent's real path, so /tmp/x is /private/tmp/x
    const parent = nodePath.dirname(path)
    return parent === path ? path : nodePath.join(real(parent), nodePath.basename(path))
  }
}

/** The Seatbelt profile of `policy`, with the session's temporary directory and the proxy's port. */
export const profile = (policy: Policy, runtime: { readonly tmpDir: string; readonly proxyPort?: number }): string => {
  const paths = (filter: "subpath" | "literal", list: ReadonlyArray<string>) => list.map((p) => `(${filter} ${quote(real(p))})`).join(" ")
  const held = [...policy.readOnly, ...policy.placeholders, ...policy.absent]
  const lines = [
    "(version 1)",
    "(allow default)",
    "; writes: only the writable trees, the session's temporary directory and the devices commands expect",
    "(deny file-write*)",
    `(allow file-write* ${paths("subpath", [...policy.writable, runtime.tmpDir])} ` +
    `(literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty") (literal "/dev/dtracehelper"))`,
    ...(held.length > 0 ? [`(deny file-write* ${paths("subpath", held)})`] : []),
    "; credentials and the loop's own directories: not even readable",
    ...policy.hidden.map((h) => `(deny file-read* file-write* (${h.kind === "dir" ? "subpath" : "literal"} ${quote(real(h.path))}))`),
    "; network: the loop's proxy on loopback only; Unix sockets only in the temporary directory",
    "(deny network*)",
    ...(runtime.proxyPort === undefined ? [] : [`(allow network-outbound (remote ip "localhost:${runtime.proxyPort}"))`]),
    `(allow network* (remote unix-socket ${paths("subpath", [runtime.tmpDir])}))`,
    `(allow network-bind (local unix-socket ${paths("subpath", [runtime.tmpDir])}))`,
    "; processes: signals only within the sandbox",
    "(deny signal)",
    "(allow signal (target same-sandbox))"
  ]
  return lines.join("\n")
}

/** Whether `sandbox-exec` runs a trivial profile here. */
const probe = (sandboxExec: string): Effect.Effect<SandboxStatus> =>
  Effect.sync(() => {
    if (kindOf(sandboxExec) !== "file") {
      return { kind: "macos", available: false, reason: `sandbox-exec is not at ${sandboxExec}`, fix: `it ships with macOS; ${OFF_FIX}` }
    }
    return { kind: "macos", available: true, detail: `sandbox-exec at ${sandboxExec} (the macOS sandbox is not tested by the project)` }
  })

/** A macOS sandbox for the lifetime of the scope. */
export const make = (options: MacosOptions = {}): Effect.Effect<SandboxShape, never, Scope.Scope | ChildProcessSpawner.ChildProcessSpawner> =>
  Effect.gen(function*() {
    const context = yield* Effect.context<ChildProcessSpawner.ChildProcessSpawner>()
    const sandboxExec = options.sandboxExec ?? "/usr/bin/sandbox-exec"
    const home = options.home ?? os.homedir()
    const allowedHosts = options.allowedHosts ?? []
    const status = yield* Effect.cached(probe(sandboxExec))
    const tmpDir = yield* Effect.acquireRelease(
      Effect.sync(() => real(nodeFs.mkdtempSync(nodePath.join(options.tmpRoot ?? os.tmpdir(), "agent-loop-sandbox-")))),
      (dir) => Effect.sync(() => nodeFs.rmSync(dir, { recursive: true, force: true }))
    )
    const scope = yield* Effect.scope
    const proxy = yield* Effect.cached(Proxy.serve({ host: "127.0.0.1", port: 0 }, allowedHosts).pipe(Scope.provide(scope)))
    const gitCache = new Map<string, GitLayout>()
    const policies = new WeakMap<object, { readonly policy: Policy; readonly workspace: string }>()
    const grants = new Set<string>()
    const shape: SandboxShape = {
      kind: "macos",
      status,
      wrap: (request) =>
        Effect.gen(function*() {
          const s = yield* status
          if (!s.available) return yield* Effect.fail(new SandboxError({ reason: "Unavailable", message: `The sandbox cannot start: ${s.reason}; ${s.fix}` }))
          const workspace = real(request.workspace ?? request.cwd)
          const key = gitKey(workspace)
          const git = gitCache.get(key) ?? (yield* gitLayout(workspace).pipe(Effect.provideContext(context)))
          gitCache.set(key, git)
          const secrets = yield* Secrets
          const policy = compile({
            workspace, cwd: request.cwd, home, git, kindOf, hostEnv: process.env, env: request.env ?? {},
            allowWrite: options.allowWrite ?? [], denyWrite: options.denyWrite ?? [], denyRead: options.denyRead ?? [],
            userDirs: options.userDirs ?? userDirsOf(process.env, home), protect: options.protect ?? [], allowedHosts,
            isSecret: (name, value) => isSecretEnv(name, value, secrets),
            ...(request.pass === undefined ? {} : { pass: request.pass })
          })
          const proxyPort = allowedHosts.length > 0 ? yield* proxy : undefined
          policies.set(request, { policy, workspace })
          const url = proxyPort === undefined ? undefined : `http://127.0.0.1:${proxyPort}`
          const env = { ...policy.env, TMPDIR: tmpDir, ...(url === undefined ? {} : { HTTP_PROXY: url, HTTPS_PROXY: url, http_proxy: url, https_proxy: url }) }
          return {
            command: sandboxExec,
            args: ["-p", profile(policy, { tmpDir, ...(proxyPort === undefined ? {} : { proxyPort }) }), request.command, ...request.args],
            cwd: request.cwd,
            env,
            extendEnv: false,
            sandboxed: true
          }
        }),
      review: (request, outcome) =>
        Effect.sync(() => {
          const known = policies.get(request)
          const denied = known === undefined ? undefined : denialOf(known.policy, outcome.exitCode, outcome.output)
          return denied === undefined ? { notes: [] } : { denied, notes: [] }
        }),
      grantUnsandboxed: (id) => Effect.sync(() => void grants.add(id)),
      takeUnsandboxedGrant: (id) => Effect.sync(() => grants.delete(id))
    }
    return shape
  })

/** The macOS sandbox as a layer. */
export const layer = (options: MacosOptions = {}): Layer.Layer<never, never, ChildProcessSpawner.ChildProcessSpawner> =>
  Layer.effect(Sandbox, make(options)) as Layer.Layer<never, never, ChildProcessSpawner.ChildProcessSpawner>
