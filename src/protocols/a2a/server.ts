/**
 * The loop as an A2A v1.0 agent, served beside the HTTP API (`agent-loop serve`): the agent card
 * at `GET /.well-known/agent-card.json` (public) and the JSON-RPC endpoint at `POST /a2a`, behind
 * the API's bearer token (an empty 401 otherwise). Methods: `SendMessage`, `SendStreamingMessage`
 * (server-sent events), `GetTask`, `CancelTask` and `SubscribeToTask`; push notifications are not
 * offered. Tasks, approvals and cancel as `tasks.ts` maps them.
 *
 * Built on `effect/http` and Schemas: `@a2a-js/sdk` is not needed to serve (its client is what the
 * tests drive it with). Errors are JSON-RPC errors with the spec's codes: -32700 a body that is not
 * JSON, -32600 not a JSON-RPC request, -32601 an unknown method, -32602 bad params, -32001 an
 * unknown task, -32002 a task that cannot be canceled, -32004 an operation not supported here.
 *
 * Mounted by `agent-loop serve`: `Server.layer({ token, protocols: [protocol({ version })] })`.
 */
import { createHash, timingSafeEqual } from "node:crypto"
import * as ByteSize from "effect/ByteSize"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as HttpIncomingMessage from "effect/http/HttpIncomingMessage"
import * as HttpRouter from "effect/http/HttpRouter"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { AgentLoop } from "../../services/AgentLoop.ts"
import { Secrets } from "../../services/Secrets.ts"
import { type ApprovalDesk, type OutputSchemaLoader, Tasks } from "./tasks.ts"
import * as Wire from "./wire.ts"

/** How the agent describes itself and where it is served. */
export interface Options {
  /** The version the card states (the package's). */
  readonly version: string
  /** Default `agent-loop`. */
  readonly name?: string
  readonly description?: string
  /** The JSON-RPC endpoint's path; default `/a2a`. */
  readonly path?: string
  /**
   * The origin clients reach the server at (behind a TLS proxy: `https://agents.example.com`), for
   * the card's interface URL; default the one the request came to (`X-Forwarded-Proto` and
   * `X-Forwarded-Host` when a proxy set them, else http and `Host`).
   */
  readonly publicUrl?: string
  /** Imports the JSON Schema of a typed answer (`metadata.outputSchema`); without it, typed answers are refused. */
  readonly outputSchema?: OutputSchemaLoader
}

/** What the HTTP server hands the protocol (`Server.Shared`). */
export interface Shared {
  readonly token: Redacted.Redacted<string>
  readonly maxBodyBytes: number
  readonly approvals?: ApprovalDesk
}

/** The card's path, as the spec fixes it. */
export const CARD_PATH = "/.well-known/agent-card.json"

const digest = (text: string) => createHash("sha256").update(text).digest()

const DEFAULT_DESCRIPTION =
  "An event-driven, interruptible agent loop: each task is a turn in the session named by its contextId, with tools that read, edit and run commands under the server's approval rules."

/**
 * The protocol for `Server.Options.protocols`: adds the card and the JSON-RPC endpoint to the
 * server's router, for the server's scope.
 */
export const protocol = (options: Options) => (shared: Shared): Effect.Effect<void, never, HttpRouter.HttpRouter | AgentLoop | Scope.Scope> =>
  Effect.gen(function*() {
    const router = yield* HttpRouter.HttpRouter
    const loop = yield* AgentLoop
    const secrets = yield* Secrets
    const path = (options.path ?? "/a2a") as HttpRouter.PathInput
    const tasks = new Tasks({
      loop,
      fibers: yield* FiberSet.make<void>(),
      scrub: secrets.scrub,
      ...(shared.approvals === undefined ? {} : { desk: shared.approvals }),
      ...(options.outputSchema === undefined ? {} : { outputSchema: options.outputSchema })
    })
    const stop = tasks.watchApprovals()
    yield* Effect.addFinalizer(() => Effect.sync(stop))
    const expected = digest(Redacted.value(shared.token))

    const card = (request: HttpServerRequest.HttpServerRequest) => {
      // behind a TLS proxy the card names the address the client used, when the proxy says it
      const forwarded = (name: string) => request.headers[name]?.split(",")[0]?.trim() || undefined
      const origin = options.publicUrl?.replace(/\/+$/, "") ??
        `${forwarded("x-forwarded-proto") === "https" ? "https" : "http"}://${forwarded("x-forwarded-host") ?? request.headers["host"] ?? "127.0.0.1"}`
      return Effect.succeed(HttpServerResponse.jsonUnsafe(
        Wire.agentCard({ name: options.name ?? "agent-loop", description: options.description ?? DEFAULT_DESCRIPTION, version: options.version, url: `${origin}${path}` }),
        { headers: { "cache-control": "no-store" } }
      ))
    }

    const authorized = (request: HttpServerRequest.HttpServerRequest): boolean => {
      const header = request.headers["authorization"]
      if (header === undefined || !/^bearer /i.test(header)) return false
      return timingSafeEqual(expected, digest(header.slice("bearer ".length)))
    }

    // what goes out is scrubbed of the secrets known now, as the API's answers are
    const reply = (id: Wire.RpcRequest["id"], body: { readonly result: unknown } | { readonly error: Wire.RpcError }) =>
      HttpServerResponse.text(
        secrets.scrub(JSON.stringify({ jsonrpc: "2.0", id: id ?? null, ...("result" in body ? { result: body.result } : { error: errorJson(body.error) }) })),
        { contentType: "application/json" }
      )

    const sse = (id: Wire.RpcRequest["id"], events: Stream.Stream<Wire.StreamEvent>) =>
      HttpServerResponse.stream(
        events.pipe(
          Stream.map((result) => encoder.encode(`data: ${secrets.scrub(JSON.stringify({ jsonrpc: "2.0", id: id ?? null, result }))}\n\n`))
        ),
        { contentType: "text/event-stream", headers: { "cache-control": "no-store", "x-accel-buffering": "no" } }
      )

    /** One JSON-RPC call, once the body is JSON. */
    const dispatch = (body: unknown, request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        const call = yield* Effect.try({
          try: () => Wire.decode(Wire.RpcRequest, body, Wire.ErrorCode.InvalidRequest, "not a JSON-RPC 2.0 request"),
          catch: (error) => error as Wire.RpcError
        }).pipe(Effect.mapError((error) => ({ id: idOf(body), error })))
        const fail = (error: Wire.RpcError) => ({ id: call.id, error })
        const version = request.headers["a2a-version"]
        if (version !== undefined && version !== "" && version !== Wire.PROTOCOL_VERSION && version !== "1") {
          return yield* Effect.fail(fail(new Wire.RpcError(Wire.ErrorCode.VersionNotSupported, `A2A version ${version} is not supported: this agent speaks ${Wire.PROTOCOL_VERSION}`)))
        }
        const params = <S extends Parameters<typeof Wire.decode>[0]>(schema: S): Effect.Effect<S["Type"], { id: Wire.RpcRequest["id"]; error: Wire.RpcError }> =>
          Effect.try({ try: () => Wire.decode(schema, call.params ?? {}, Wire.ErrorCode.InvalidParams, "invalid params"), catch: (error) => fail(error as Wire.RpcError) })
        const run = <A>(effect: Effect.Effect<A, Wire.RpcError>) => Effect.mapError(effect, fail)
        switch (call.method) {
          case "SendMessage": {
            const sent = yield* params(Wire.SendMessageParams)
            const received = yield* run(tasks.receive(sent))
            if (sent.configuration?.returnImmediately === true) {
              received.close()
              return reply(call.id, { result: { task: received.task } })
            }
            const last = yield* Stream.runFold(received.events, () => received.task, (task, event) => "task" in event ? event.task : task)
            const task = yield* run(tasks.get(last.id, sent.configuration?.historyLength))
            return reply(call.id, { result: { task } })
          }
          case "SendStreamingMessage": {
            const received = yield* run(tasks.receive(yield* params(Wire.SendMessageParams)))
            return sse(call.id, received.events)
          }
          case "SubscribeToTask": {
            const { id } = yield* params(Wire.GetTaskParams)
            return sse(call.id, yield* run(tasks.subscribe(id)))
          }
          case "GetTask": {
            const { id, historyLength } = yield* params(Wire.GetTaskParams)
            return reply(call.id, { result: yield* run(tasks.get(id, historyLength)) })
          }
          case "CancelTask": {
            const { id } = yield* params(Wire.CancelTaskParams)
            return reply(call.id, { result: yield* run(tasks.cancel(id)) })
          }
          case "CreateTaskPushNotificationConfig":
          case "GetTaskPushNotificationConfig":
          case "ListTaskPushNotificationConfigs":
          case "DeleteTaskPushNotificationConfig":
            return yield* Effect.fail(fail(new Wire.RpcError(Wire.ErrorCode.PushNotificationNotSupported, "Push notifications are not supported")))
          case "ListTasks":
          case "GetExtendedAgentCard":
            return yield* Effect.fail(fail(new Wire.RpcError(Wire.ErrorCode.UnsupportedOperation, `${call.method} is not supported by this agent`)))
          default:
            return yield* Effect.fail(fail(new Wire.RpcError(Wire.ErrorCode.MethodNotFound, `Method not found: ${call.method}`)))
        }
      }).pipe(Effect.catch(({ id, error }) => Effect.succeed(reply(id, { error }))))

    const endpoint = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        if (!authorized(request)) return HttpServerResponse.empty({ status: 401 })
        if (Number(request.headers["content-length"] ?? 0) > shared.maxBodyBytes) return HttpServerResponse.empty({ status: 413 })
        const text = yield* request.text.pipe(
          Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(shared.maxBodyBytes)),
          Effect.map((text) => ({ text })),
          Effect.catchCause(() => Effect.succeed(undefined))
        )
        if (text === undefined) return HttpServerResponse.empty({ status: 413 })
        let body: unknown
        try {
          body = JSON.parse(text.text)
        } catch {
          return reply(null, { error: new Wire.RpcError(Wire.ErrorCode.ParseError, "Parse error: the body is not JSON") })
        }
        return yield* dispatch(body, request)
      })

    yield* router.add("GET", CARD_PATH, card)
    yield* router.add("POST", path, endpoint)
  })

const encoder = new TextEncoder()

/** The id of a request that did not decode, when it has a usable one. */
const idOf = (body: unknown): Wire.RpcRequest["id"] => {
  const id = body !== null && typeof body === "object" ? (body as { id?: unknown }).id : undefined
  return typeof id === "string" || (typeof id === "number" && Number.isInteger(id)) ? id : null
}

const errorJson = (error: Wire.RpcError) => ({ code: error.code, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) })
