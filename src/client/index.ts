/**
 * effect-agent-loop/client: a typed client of the loop's HTTP API (`agent-loop serve`, the
 * `Server` layer), made from the same `HttpApi` declaration as the server, so its requests and
 * answers are the server's Schemas. For an Effect application (`make`, needing an `HttpClient`)
 * and for plain Promise code (`connect`, on `fetch`).
 *
 * `events` is a `Stream` that reconnects by itself: after a cut it asks again with the id of the
 * last event it gave (`Last-Event-ID`), so the stream it gives misses nothing and repeats nothing
 * the server still has (a `gap` frame says when the server had dropped some).
 *
 * @example
 * ```ts
 * import { Effect, Stream } from "effect"
 * import { FetchHttpClient } from "effect/http"
 * import { AgentLoopClient } from "effect-agent-loop/client"
 *
 * const program = Effect.gen(function*() {
 *   const client = yield* AgentLoopClient.make({ baseUrl: "http://127.0.0.1:4318", token: process.env.TOKEN! })
 *   const turnId = yield* client.sessions.send("demo", "What is in this directory?")
 *   const result = yield* client.turns.wait(turnId)
 *   console.log(result.finalMessage?.content)
 * }).pipe(Effect.provide(FetchHttpClient.layer))
 * ```
 */
export * as AgentLoopClient from "./client.ts"
