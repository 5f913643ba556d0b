/**
 * `SandboxLinux`: commands confined by bubblewrap (`bwrap`, from the distribution), under the
 * policy of `policy.ts` — recomputed before every command, so a protected location that appeared
 * since the last one is read-only from this one on.
 *
 * It fails closed: when bubblewrap is missing or cannot create its namespaces (probed once, by
 * running `bwrap … true`), `wrap` fails with `SandboxError` `Unavailable`, whose one line names the
 * fix; nothing runs unconfined by accident. `SandboxAuto.layer` is the choice that falls back to
 * running unconfined where no sandbox can run.
 *
 * Per session (the layer's lifetime) it keeps a private directory, removed at the end: the
 * sandbox's `/tmp` (and `TMPDIR`), and the proxy's socket when hosts are allowed.
 *
 * @example
 * ```ts
 * import { Layer } from "effect"
 * import { NodeServices } from "@effect/platform-node"
 * import { SandboxLinux } from "effect-agent-loop"
 *
 * const sandbox = SandboxLinux.layer({ allowedHosts: ["registry.npmjs.org"] }).pipe(Layer.provide(NodeServices.layer))
 * ```
 */
import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import * as Scope from "effect/Scope"
import { isSecretEnv } from "../../tools/exec.ts"
import {
  Sandbox,
  SandboxError,
  type SandboxRequest,
  type SandboxShape,
  type SandboxStatus
} from "../../services/Sandbox.ts"
import { Secrets } from "../../services/Secrets.ts"
import { bridgeCommand } from "./bridge.ts"
import { denialOf, findOnPath, gitKey, gitLayout, kindOf, probe } from "./internal.ts"
import { bwrapArgs, compile, type GitLayout, type Policy, PROXY_PORT, PROXY_SOCKET_INSIDE, userDirsOf } from "./policy.ts"
import * as Proxy from "./proxy.ts"

/** What the Linux sandbox allows beyond its defaults, and where it finds things. */
export interface LinuxOptions {
  /** bubblewrap's path; default `bwrap` on `PATH`. */
  readonly bwrap?: string
  /** More writable paths (`sandbox.filesystem.allowWrite`, `permissions.additionalDirectories`). */
  readonly allowWrite?: ReadonlyArray<string>
  /** Read-only paths inside writable ones (`sandbox.filesystem.denyWrite`). */
  readonly denyWrite?: ReadonlyArray<string>
  /** Unreadable paths (`Read(…)` deny rules, `sandbox.filesystem.denyRead`). */
  readonly denyRead?: ReadonlyArray<string>
  /** Host patterns reachable through the proxy (`WebFetch(domain:…)` allow rules, `sandbox.network.allowedDomains`). */
  readonly allowedHosts?: ReadonlyArray<string>
  /** More protected locations, relative to the workspace root (as `BuiltinToolsOptions.protect`). */
  readonly protect?: ReadonlyArray<string>
  /** The home directory whose credentials are hidden; default `os.homedir()`. */
  readonly home?: string
  /** The loop's own directories, never readable; default the CLI's (`userDirsOf`). */
  readonly userDirs?: ReadonlyArray<string>
  /** Where the session's private directory is made; default the OS temporary directory. */
  readonly tmpRoot?: string
  /** The Node binary that runs the network bridge; default this process's. */
  readonly node?: string
}

interface Held {
  count: number
}

/** A Linux sandbox for the lifetime of the scope. */
export const make = (options: LinuxOptions = {}): Effect.Effect<SandboxShape, never, Scope.Scope | ChildProcessSpawner.ChildProcessSpawner> =>
  Effect.gen(function*() {
    const context = yield* Effect.context<ChildProcessSpawner.ChildProcessSpawner>()
    const bwrap = options.bwrap ?? findOnPath("bwrap", process.env["PATH"])
    const home = options.home ?? os.homedir()
    const userDirs = options.userDirs ?? userDirsOf(process.env, home)
    const allowedHosts = options.allowedHosts ?? []
    const separateVarRun = (() => {
      try {
        return !nodeFs.lstatSync("/var/run").isSymbolicLink()
      } catch {
        return false
      }
    })()

    const status = yield* Effect.cached(probe(bwrap).pipe(Effect.provideContext(context)))

    // the session's directory: /tmp inside, the proxy's socket, the empty source of placeholders
    const session = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const dir = nodeFs.mkdtempSync(nodePath.join(options.tmpRoot ?? os.tmpdir(), "agent-loop-sandbox-"))
        nodeFs.chmodSync(dir, 0o700)
        for (const sub of ["tmp", "empty"]) nodeFs.mkdirSync(nodePath.join(dir, sub), { mode: 0o700 })
        nodeFs.chmodSync(nodePath.join(dir, "tmp"), 0o1777)
        nodeFs.chmodSync(nodePath.join(dir, "empty"), 0o555)
        return dir
      }),
      (dir) => Effect.sync(() => nodeFs.rmSync(dir, { recursive: true, force: true }))
    )
    const scope = yield* Effect.scope
    const proxySocket = nodePath.join(session, "proxy.sock")
    const proxy = yield* Effect.cached(
      Proxy.serve({ socket: proxySocket }, allowedHosts).pipe(Scope.provide(scope))
    )

    const gitCache = new Map<string, GitLayout>()
    const layoutOf = (root: string) =>
      Effect.gen(function*() {
        const key = gitKey(root)
        const cached = gitCache.get(key)
        if (cached !== undefined) return cached
        const layout = yield* gitLayout(root).pipe(Effect.provideContext(context))
        gitCache.set(key, layout)
        return layout
      })

    // placeholders made by running commands: removed when the last command holding one ends
    const held = new Map<string, Held>()
    const hold = (paths: ReadonlyArray<string>) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          for (const path of paths) {
            const entry = held.get(path) ?? { count: 0 }
            entry.count++
            held.set(path, entry)
          }
        }),
        () =>
          Effect.sync(() => {
            for (const path of paths) {
              const entry = held.get(path)
              if (entry === undefined || --entry.count > 0) continue
              held.delete(path)
              try {
                nodeFs.rmdirSync(path) // only the empty directory bubblewrap made
              } catch {
                // not empty or gone: not ours to remove
              }
            }
          })
      )

    const policies = new WeakMap<SandboxRequest, { readonly policy: Policy; readonly workspace: string }>()
    const grants = new Set<string>()
    const node = options.node ?? process.execPath

    const unavailable = (s: SandboxStatus) =>
      new SandboxError({ reason: "Unavailable", message: `The sandbox cannot start: ${s.reason}; ${s.fix}` })

    const wrap: SandboxShape["wrap"] = (request) =>
      Effect.gen(function*() {
        const s = yield* status
        if (!s.available) return yield* Effect.fail(unavailable(s))
        const workspace = realpath(request.workspace ?? request.cwd)
        const git = yield* layoutOf(workspace)
        const secrets = yield* Secrets
        const policy = compile({
          workspace,
          cwd: request.cwd,
          home,
          git,
          allowWrite: options.allowWrite ?? [],
          denyWrite: options.denyWrite ?? [],
          denyRead: options.denyRead ?? [],
          userDirs,
          protect: options.protect ?? [],
          allowedHosts,
          kindOf,
          hostEnv: process.env,
          env: request.env ?? {},
          isSecret: (name, value) => isSecretEnv(name, value, secrets),
          // the program itself, when named by its path (an MCP server's Node), with where its links lead
          programs: [
            node,
            ...(nodePath.isAbsolute(request.command) ? [request.command, realpath(request.command)] : []),
            ...(request.reads ?? []).filter((p) => nodePath.isAbsolute(p)).flatMap((p) => [nodePath.dirname(p), p])
          ],
          ...(request.pass === undefined ? {} : { pass: request.pass })
        })
        if (allowedHosts.length > 0) yield* proxy
        yield* hold(policy.placeholders)
        policies.set(request, { policy, workspace })
        const args = bwrapArgs(policy, {
          tmpDir: nodePath.join(session, "tmp"),
          emptyDir: nodePath.join(session, "empty"),
          separateVarRun,
          ...(allowedHosts.length > 0 ? { proxySocket, bridge: bridgeCommand(node, PROXY_SOCKET_INSIDE, PROXY_PORT) } : {})
        }, request.command, request.args)
        return { command: bwrap!, args, cwd: request.cwd, env: {}, extendEnv: false, sandboxed: true }
      })

    const shape: SandboxShape = {
      kind: "linux",
      status,
      wrap,
      review: (request, outcome) =>
        Effect.sync(() => {
          const known = policies.get(request)
          if (known === undefined) return { notes: [] }
          const made = known.policy.absent.filter((p) => kindOf(p) !== "missing")
          const notes = made.length === 0 ? [] : [
            `[sandbox: the command created ${made.map((p) => nodePath.relative(known.workspace, p)).join(", ")}: protected ` +
            "locations, whose files agent-loop, git or editors run or trust; read-only from the next command on. " +
            "The user should check what the command put there]"
          ]
          const denied = denialOf(known.policy, outcome.exitCode, outcome.output)
          return denied === undefined ? { notes } : { denied, notes }
        }),
      grantUnsandboxed: (id) => Effect.sync(() => void grants.add(id)),
      takeUnsandboxedGrant: (id) => Effect.sync(() => grants.delete(id))
    }
    return shape
  })

const realpath = (path: string): string => {
  try {
    return nodeFs.realpathSync(path)
  } catch {
    return nodePath.resolve(path)
  }
}

/** The Linux sandbox as a layer (needs a `ChildProcessSpawner`: `NodeServices.layer`). */
export const layer = (options: LinuxOptions = {}): Layer.Layer<never, never, ChildProcessSpawner.ChildProcessSpawner> =>
  Layer.effect(Sandbox, make(options)) as Layer.Layer<never, never, ChildProcessSpawner.ChildProcessSpawner>
