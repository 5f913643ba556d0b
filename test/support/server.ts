/**
 * The API server on 127.0.0.1 (an ephemeral port) over a real loop: a scripted model, sessions in
 * memory or in a SQLite file, an `echo` tool, a `gate` tool that waits for the test, a `danger`
 * tool that needs approval, and `peek`, read-only (so it runs beside `gate`) but needing approval. `close` stops the server (its scope) and removes the directory.
 */
import * as fs from "node:fs"
import { createServer } from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Deferred, Effect, Exit, Layer, Redacted, Schema, Scope } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import {
  AgentLoop,
  AgentLoopLive,
  EventBus,
  Message,
  Scripted,
  Server,
  SessionStore,
  SessionStoreMemory,
  SessionStoreSql,
  Tool,
  ToolRegistryLive
} from "effect-agent-loop"
import type { ProviderTypes } from "effect-agent-loop"
import { openEventStream } from "./sse.ts"

/** What the scripted model answers, by the last message of each request. */
const script = (request: ProviderTypes.ProviderRequest): Scripted.ScriptedResponse => {
  const last = request.messages.at(-1)!
  const usage = { inputTokens: 10, outputTokens: 5 }
  if (last.role === "tool") return { content: `finished after ${last.toolName}: ${Message.textOf(last.content)}`, usage }
  const text = last.role === "user" ? Message.textOf(last.content) : ""
  if (text.startsWith("wait")) return { toolCalls: [{ id: "call-gate", name: "gate", arguments: {} }], usage }
  if (text.startsWith("danger")) return { toolCalls: [{ id: "call-danger", name: "danger", arguments: { what: text } }], usage }
  if (text.startsWith("both")) {
    return { toolCalls: [{ id: "call-gate", name: "gate", arguments: {} }, { id: "call-peek", name: "peek", arguments: {} }], usage }
  }
  if (text.startsWith("echo")) return { toolCalls: [{ id: "call-echo", name: "echo", arguments: { text } }], usage }
  return { content: `You said: ${text}`, usage }
}

/** A served API and the loop behind it. */
export interface ServerFixture {
  readonly origin: string
  readonly token: string
  /** Runs an effect with the loop's services. */
  readonly run: <A, E>(effect: Effect.Effect<A, E, AgentLoop | SessionStore | EventBus>) => Promise<A>
  /** Opens the gate the `gate` tool waits on (one turn each). */
  readonly openGate: () => Promise<void>
  /** Times `danger` ran. */
  readonly dangerRuns: () => number
  readonly close: () => Promise<void>
}

/** Starts the loop and the server. */
export const startServer = async (
  options: Omit<Server.Options, "token"> & {
    readonly sqlite?: boolean
    readonly approvalTimeout?: number
    /** The directory of the SQLite file, to start a server again over the sessions of an earlier one (kept at close). */
    readonly dir?: string
  } = {}
): Promise<ServerFixture> => {
  const dir = options.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), "agent-loop-server-"))
  let gate = Effect.runSync(Deferred.make<void>())
  let dangerRuns = 0
  const gated = Tool.make({
    name: "gate",
    description: "Waits until the test lets it finish",
    parameters: Schema.Struct({}),
    readOnly: true,
    execute: () => Effect.suspend(() => Deferred.await(gate)).pipe(Effect.as("the gate opened"))
  })
  const echo = Tool.make({
    name: "echo",
    description: "Echoes its text",
    parameters: Schema.Struct({ text: Schema.String }),
    readOnly: true,
    execute: ({ text }) => Effect.succeed(text)
  })
  const danger = Tool.make({
    name: "danger",
    description: "Needs approval",
    parameters: Schema.Struct({ what: Schema.String }),
    requiresApproval: true,
    execute: () => Effect.sync(() => ++dangerRuns).pipe(Effect.as("done the dangerous thing"))
  })
  const peek = Tool.make({
    name: "peek",
    description: "Reads something, with approval",
    parameters: Schema.Struct({}),
    readOnly: true,
    requiresApproval: true,
    execute: () => Effect.succeed("peeked")
  })
  const token = Server.makeToken()
  const loop = AgentLoopLive.layer({ model: "test-model", approvalTimeout: options.approvalTimeout ?? 60_000 }).pipe(
    Layer.provideMerge(Layer.mergeAll(
      Scripted.layer(script),
      ToolRegistryLive.layer([echo, gated, danger, peek]),
      options.sqlite === true ? SessionStoreSql.layerSqlite(path.join(dir, "sessions.db")) : SessionStoreMemory.layer()
    ))
  )
  const server = HttpRouter.serve(Server.layer({ ...options, token }), { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" }))
  )
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(Layer.provideMerge(server, loop), scope))
  return {
    origin: HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address),
    token: Redacted.value(token),
    run: (effect) => Effect.runPromise(Effect.provide(effect, context)),
    openGate: async () => {
      const opened = gate
      gate = Effect.runSync(Deferred.make<void>())
      await Effect.runPromise(Deferred.succeed(opened, undefined))
    },
    dangerRuns: () => dangerRuns,
    close: async () => {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      if (options.dir === undefined) fs.rmSync(dir, { recursive: true, force: true })
    }
  }
}

/** A request to the API with the token (unless `headers` replace it), 30 s at most. */
export const call = (f: ServerFixture, method: string, route: string, body?: unknown, headers?: Record<string, string>) =>
  fetch(`${f.origin}${route}`, {
    method,
    headers: headers ?? { authorization: `Bearer ${f.token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    signal: AbortSignal.timeout(30_000)
  })

export type { SseFrame } from "./sse.ts"

/**
 * Connects to an events route and returns once the server has subscribed (its first comment);
 * `until` reads until `enough` holds (deadline 30 s); `close` drops the connection.
 */
export const connectEvents = (f: ServerFixture, route: string, headers: Record<string, string> = {}) =>
  openEventStream(`${f.origin}${route}`, { authorization: `Bearer ${f.token}`, ...headers })
