/**
 * An inspector served on 127.0.0.1 over a real loop: a scripted model, a SQLite session store in a
 * temporary directory, and tools for the cases the inspector tests look at (an image, a sub-turn,
 * a hostile tool result, a tool that waits for the test). Built once per test file; `close` stops
 * the server and removes the directory.
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
  Inspector,
  Message,
  Scripted,
  SessionStore,
  SessionStoreSql,
  subagent,
  Tool,
  ToolRegistryLive
} from "effect-agent-loop"
import type { ProviderTypes } from "effect-agent-loop"
import { openEventStream, type SseFrame } from "./sse.ts"

/** What a hostile model writes into a tool result. */
export const HOSTILE = `<script>window.pwned = 1; document.title = "pwned"</script></script><script>window.pwned = 2</script><img src=x onerror="window.pwned = 3">`

/** A 1×1 red PNG. */
export const RED_PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

/** What the scripted model answers: by the last message of each request. */
const script = (request: ProviderTypes.ProviderRequest): Scripted.ScriptedResponse => {
  const last = request.messages.at(-1)!
  const usage = { inputTokens: 100 * request.messages.length, outputTokens: 7, costUsd: 0.001 }
  // the delegating session's calls take a moment each, so its timeline has visible bars (the README's screenshot)
  const delegating = Message.textOf(request.messages.find((m) => m.role === "user")?.content ?? "")
  const delay = delegating.startsWith("delegate") || delegating === "count the files" ? { delay: "60 millis" as const } : {}
  if (last.role === "tool") return { content: `finished after ${last.toolName}`, usage, ...delay }
  const text = last.role === "user" ? Message.textOf(last.content) : ""
  if (text.startsWith("delegate")) return { toolCalls: [{ id: "call-sub", name: "subagent", arguments: { task: "count the files" } }], usage, ...delay }
  if (text === "count the files") return { content: "There are 3 files.", usage, ...delay }
  if (text.startsWith("hostile")) return { toolCalls: [{ id: "call-echo", name: "echo", arguments: { text: HOSTILE } }], usage }
  if (text.startsWith("wait")) return { toolCalls: [{ id: "call-gate", name: "gate", arguments: {} }], usage }
  // a reply that streams slowly, piece by piece, so a page can watch it flow in
  if (text.startsWith("stream slowly")) return { content: ["The answer ", "flows in ", "piece ", "by ", "piece."], chunkDelay: "300 millis", usage }
  return { content: `You said: ${text}`, usage }
}

const echo = Tool.make({
  name: "echo",
  description: "Echoes its text",
  parameters: Schema.Struct({ text: Schema.String }),
  readOnly: true,
  execute: ({ text }) => Effect.succeed(text)
})

/** A served inspector and the loop behind it. */
export interface InspectorFixture {
  /** The page's URL with the token. */
  readonly url: string
  /** The page's URL without the token. */
  readonly origin: string
  readonly token: string
  /** Runs an effect with the loop's services. */
  readonly run: <A, E>(effect: Effect.Effect<A, E, AgentLoop | SessionStore | EventBus>) => Promise<A>
  /** Opens the gate the `gate` tool waits on (one turn each). */
  readonly openGate: () => Promise<void>
  /** The SQLite file the sessions are in. */
  readonly database: string
  readonly close: () => Promise<void>
}

/** Starts the loop and the inspector (`replayEvents` bounds its replay buffer). */
export const startInspector = async (options: Pick<Inspector.Options, "replayEvents" | "liveBacklog"> = {}): Promise<InspectorFixture> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-loop-inspector-"))
  const database = path.join(dir, "sessions.db")
  let gate = Effect.runSync(Deferred.make<void>())
  const gated = Tool.make({
    name: "gate",
    description: "Waits until the test lets it finish",
    parameters: Schema.Struct({}),
    readOnly: true,
    execute: () => Effect.suspend(() => Deferred.await(gate)).pipe(Effect.as("the gate opened"))
  })
  const token = Inspector.makeToken()
  const loop = AgentLoopLive.layer({ model: "test-model", acceptsImages: true }).pipe(
    Layer.provideMerge(Layer.mergeAll(
      Scripted.layer(script),
      ToolRegistryLive.layer([echo, gated, subagent]),
      SessionStoreSql.layerSqlite(database)
    ))
  )
  const server = HttpRouter.serve(
    Inspector.layer({ token, ...options }),
    { disableLogger: true, disableListenLog: true }
  ).pipe(Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" })))
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(Layer.provideMerge(server, loop), scope))
  const origin = HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address)
  return {
    url: Inspector.url(origin, token),
    origin,
    token: Redacted.value(token),
    database,
    run: (effect) => Effect.runPromise(Effect.provide(effect, context)),
    openGate: async () => {
      const opened = gate
      gate = Effect.runSync(Deferred.make<void>())
      await Effect.runPromise(Deferred.succeed(opened, undefined))
    },
    close: async () => {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }
}

/** Runs one turn to its end. */
export const turn = (sessionKey: string, input: string | ReadonlyArray<Message.ContentPart>) =>
  Effect.gen(function*() {
    const loop = yield* AgentLoop
    return yield* loop.turn(sessionKey, input)
  })

/** A server-sent event as it arrived. */
export type Sse = SseFrame

/** The header that opens the inspector's data: the token, as the page's script sends it. */
export const tokenHeader = (token: string): Record<string, string> => ({ [Inspector.TOKEN_HEADER]: token })

/**
 * Connects to the live events with the token and returns once the server has subscribed (its
 * first comment); `until` then reads until `enough` holds (deadline 30 s) and closes the connection.
 */
export const connectEvents = async (origin: string, token: string, headers: Record<string, string> = {}) => {
  const stream = await openEventStream(`${origin}/api/events`, { ...tokenHeader(token), ...headers })
  return {
    until: async (enough: (events: Array<Sse>) => boolean) => {
      try {
        return await stream.until(enough)
      } finally {
        stream.close()
      }
    }
  }
}
