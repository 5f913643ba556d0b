/**
 * A real workspace on a temp dir for the built-in tools, and helpers to call a tool the way the
 * loop does (decode, then execute) or to run the tools inside a whole loop.
 */
import { NodeServices } from "@effect/platform-node"
import { Context, Effect, Layer } from "effect"
import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { type BuiltinToolRequirements, type CurrentTurn, Message, Tool, type ToolError, Workspace, WorkspaceLive } from "effect-agent-loop"

export const toolContext: Tool.ToolContext = { toolCallId: "call-1", turnId: "turn-1", sessionKey: "s", iteration: 0, depth: 0 }

/** A fresh real directory under the OS temp dir, removed after the scope. */
export const tempDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.sync(() => nodeFs.realpathSync(nodeFs.mkdtempSync(nodePath.join(os.tmpdir(), prefix)))),
    (dir) => Effect.sync(() => nodeFs.rmSync(dir, { recursive: true, force: true }))
  )

/** Runs `f` on a fresh real directory under the OS temp dir, removed afterwards. */
export const withTempDir = <A, E, R>(prefix: string, f: (dir: string) => Effect.Effect<A, E, R>) => Effect.scoped(Effect.flatMap(tempDir(prefix), f))

/** Runs `body` with a workspace on a fresh temp dir and a second, "outside" temp dir. */
export const withWorkspace = <A, E>(
  body: (dirs: { root: string; outside: string }) => Effect.Effect<A, E, Workspace | NodeServices.NodeServices>
) =>
  Effect.scoped(Effect.gen(function*() {
    const root = yield* tempDir("ws-")
    const outside = yield* tempDir("outside-")
    return yield* body({ root, outside }).pipe(Effect.provide(WorkspaceLive.layer(root)))
  })).pipe(Effect.provide(NodeServices.layer))

/** Decodes the arguments as the loop does, then runs the tool. */
export const call = (tool: Tool.Tool<any>, args: unknown) =>
  tool.decode(args).pipe(Effect.orDie, Effect.flatMap((decoded) => tool.execute(decoded, toolContext)), Effect.map(Tool.toOutput))

/** The content of a successful call. */
export const text = (tool: Tool.Tool<any>, args: unknown) => call(tool, args).pipe(Effect.map((output) => Message.textOf(output.content)))

/** The message of a call that must fail with a ToolError. */
export const failure = (tool: Tool.Tool<any>, args: unknown) =>
  Effect.flip(call(tool, args)).pipe(Effect.map((error) => (error as ToolError).message))

/** Writes `content` at `file` under `root`, creating parent directories. */
export const write = (root: string, file: string, content: string | Uint8Array) => {
  nodeFs.mkdirSync(nodePath.dirname(nodePath.join(root, file)), { recursive: true })
  nodeFs.writeFileSync(nodePath.join(root, file), content)
}

/** Built-in tools with their requirements provided, as the loop's registry holds them. */
export const provided = (
  tools: ReadonlyArray<Tool.Tool<BuiltinToolRequirements | CurrentTurn>>,
  context: Context.Context<BuiltinToolRequirements>
): ReadonlyArray<Tool.Tool<CurrentTurn>> =>
  tools.map((tool) => ({ ...tool, execute: (args, ctx) => Effect.provideContext(tool.execute(args, ctx), context) }))

/** The context the built-in tools need, for a workspace at `root`. */
export const builtinContext = (root: string) =>
  Layer.build(WorkspaceLive.layer(root).pipe(Layer.provideMerge(NodeServices.layer))).pipe(
    Effect.map((context) => context as Context.Context<BuiltinToolRequirements>)
  )
