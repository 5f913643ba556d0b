/**
 * MCP stdio servers and hook scripts in the sandbox, when the settings ask for it
 * (`sandbox.mcpServers`, `sandbox.hooks`; both off by default): the layers that start them are
 * given a `ChildProcessSpawner` that sends every command through `Sandbox.wrap` first, so they run
 * under the same policy as `exec`'s commands — writing only the workspace, reading none of the
 * user's credentials, reaching only the allowed hosts — with the environment they would get
 * unconfined (the layers that start them leave the process's credentials out already; an MCP
 * server's configured `env` and a hook's passed variables stay). When the sandbox cannot start, the command is
 * not started (it fails with the sandbox's one line, which names the fix).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PlatformError from "effect/PlatformError"
import * as Redacted from "effect/Redacted"
import * as ChildProcess from "effect/process/ChildProcess"
import * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import type * as Scope from "effect/Scope"
import { Sandbox, type SandboxShape } from "../../services/Sandbox.ts"
import type { SandboxChoice } from "../config/sandboxSettings.ts"
import * as SandboxLayer from "./sandboxLayer.ts"
import type { SandboxInputs } from "./sandboxPolicy.ts"

const plain = (value: string | Redacted.Redacted<string>): string => (Redacted.isRedacted(value) ? Redacted.value(value) : value)

/** A spawner that starts every command through `sandbox.wrap`, with `workspace` as the writable root. */
export const confining = (
  inner: ChildProcessSpawner.ChildProcessSpawner["Service"],
  sandbox: SandboxShape,
  workspace: string
): ChildProcessSpawner.ChildProcessSpawner["Service"] =>
  ChildProcessSpawner.make((command) =>
    Effect.gen(function*() {
      if (command._tag !== "StandardCommand" || command.options.shell !== undefined && command.options.shell !== false) {
        // nothing here starts pipelines or shell text: refused rather than run unconfined
        return yield* Effect.fail(PlatformError.badArgument({
          module: "ChildProcess",
          method: "spawn",
          description: "the sandbox runs one command with its arguments, not a pipeline or shell text"
        }))
      }
      const { options } = command
      const env: Record<string, string | undefined> = {}
      for (const [name, value] of Object.entries(options.env ?? {})) env[name] = value === undefined ? undefined : plain(value)
      const wrapped = yield* sandbox.wrap({
        command: command.command,
        args: command.args.map(plain),
        cwd: options.cwd ?? workspace,
        workspace,
        env,
        extendEnv: options.extendEnv ?? false,
        // what the layer starting it gave it (already without the process's credentials): an MCP server's token included
        pass: Object.keys(env),
        // the script a server's configuration names by its path (`node /srv/server.mjs`)
        reads: command.args.map(plain).filter((arg) => arg.startsWith("/"))
      }).pipe(Effect.mapError((error) =>
        PlatformError.systemError({
          _tag: "PermissionDenied",
          module: "ChildProcess",
          method: "spawn",
          description: error.message,
          pathOrDescriptor: command.command
        })
      ))
      return yield* inner.spawn(ChildProcess.make(wrapped.command, wrapped.args, {
        ...options,
        cwd: wrapped.cwd,
        env: wrapped.env,
        extendEnv: wrapped.extendEnv
      }))
    })
  )

/**
 * `layer` built with the confining spawner in its context (the sandbox is the one in the context
 * when it is built); `layer` unchanged when `confine` is false.
 */
export const confine = <A, E, R>(
  layer: Layer.Layer<A, E, R>,
  confine: boolean,
  workspace: string
): Layer.Layer<A, E, R | ChildProcessSpawner.ChildProcessSpawner> =>
  !confine ? layer : Layer.unwrap(Effect.gen(function*() {
    const inner = yield* ChildProcessSpawner.ChildProcessSpawner
    const sandbox = yield* Sandbox
    return Layer.provide(layer, Layer.succeed(ChildProcessSpawner.ChildProcessSpawner, confining(inner, sandbox, workspace)))
  }))

/**
 * Runs `effect` (which starts MCP servers) with its commands confined as a run's would be: in the
 * sandbox of `inputs` when `sandbox.mcpServers` is on and the sandbox is not off; as it is
 * otherwise. For `agent-loop mcp list`, so a server that starts there starts in a run too.
 */
export const asRunWould = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  options: { readonly workspace: string; readonly sandbox: SandboxChoice; readonly inputs: SandboxInputs }
): Effect.Effect<A, E, R | ChildProcessSpawner.ChildProcessSpawner | Scope.Scope> =>
  !options.sandbox.mcpServers || options.sandbox.mode === "off" ? effect : Effect.gen(function*() {
    const context = yield* Layer.build(SandboxLayer.layer({ sandbox: options.sandbox, inputs: options.inputs }))
    const inner = yield* ChildProcessSpawner.ChildProcessSpawner
    const spawner = confining(inner, Context.get(context, Sandbox), options.workspace)
    return yield* Effect.provideService(effect, ChildProcessSpawner.ChildProcessSpawner, spawner)
  })
