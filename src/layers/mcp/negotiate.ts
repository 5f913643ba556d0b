/**
 * MCP version negotiation. `effect/ai`'s client speaks the one protocol revision its transport is
 * built with and gives up when the server answers `initialize` with another. The lifecycle the
 * specification describes is: the client offers its newest revision, the server answers with that
 * one or with another it supports, and the client goes on in the server's revision if it knows it.
 *
 * So the `initialize` exchange is done here first, offering the newest revision; the transport the
 * client then gets is built for the revision the server chose, and answers the client's own
 * `initialize` with the server's reply (one process, one handshake). A server whose revision is
 * unknown, or that refuses ours without naming one we know, fails with both sides' versions named.
 */
import * as Effect from "effect/Effect"
import * as McpClient from "effect/ai/McpClient"
import * as McpClientError from "effect/ai/McpClientError"
import * as McpProtocol from "effect/ai/McpProtocol"
import type * as McpSchema from "effect/ai/McpSchema"
import { libraryName, libraryVersion } from "../providers/userAgent.ts"

/** The revisions this client speaks, newest first (the stateful ones `effect/ai` carries adapters for). */
const adapters = {
  "2025-11-25": McpProtocol.v2025_11_25,
  "2025-06-18": McpProtocol.v2025_06_18,
  "2025-03-26": McpProtocol.v2025_03_26,
  "2024-11-05": McpProtocol.v2024_11_05
} as const

type Version = keyof typeof adapters

/** The supported MCP revisions, newest first. */
export const SUPPORTED_VERSIONS = Object.keys(adapters) as ReadonlyArray<Version>

/** The revision offered first. */
export const NEWEST_VERSION: Version = SUPPORTED_VERSIONS[0]!

const isVersion = (version: unknown): version is Version => typeof version === "string" && Object.hasOwn(adapters, version)

/**
 * The client's transport type admits only the newest revisions, but its request path is driven by
 * the adapter's RPC table, which the older adapters provide; the cast is where that is assumed.
 */
export const adapterFor = (version: Version): McpProtocol.ProtocolAdapter<McpClient.ProtocolVersion> =>
  adapters[version] as unknown as McpProtocol.ProtocolAdapter<McpClient.ProtocolVersion>

const unsupported = (description: string) =>
  new McpClientError.McpClientError({ reason: new McpClientError.UnsupportedError({ description }) })

const initialize = (transport: McpClient.Transport, version: Version) =>
  transport.request({
    jsonrpc: "2.0",
    id: `initialize-${version}`,
    method: "initialize",
    params: { protocolVersion: version, capabilities: {}, clientInfo: { name: libraryName, version: libraryVersion } }
  })

/** A server's refusal that names the versions it supports, as some servers answer an unknown one. */
const supportedIn = (data: unknown): ReadonlyArray<unknown> => {
  if (typeof data !== "object" || data === null) return []
  const supported = (data as { readonly supported?: unknown }).supported
  return Array.isArray(supported) ? supported : []
}

const versionsText = `this client supports ${SUPPORTED_VERSIONS.join(", ")}`

/** The negotiated revision, and a transport for it whose `initialize` is the exchange already done. */
export interface Negotiated {
  readonly version: Version
  readonly transport: McpClient.Transport
}

/** Negotiates over `raw` (a transport whose own revision does not matter: stdio sends no version). */
export const negotiate = (raw: McpClient.Transport): Effect.Effect<Negotiated, McpClientError.McpClientError> =>
  Effect.gen(function*() {
    let offered: Version = NEWEST_VERSION
    let response = yield* initialize(raw, offered)
    if ("error" in response && response.error !== undefined) {
      const known = supportedIn(response.error.data).find(isVersion)
      if (known === undefined) {
        return yield* unsupported(
          `the server refused MCP version ${offered} (${response.error.message}); ${versionsText}`
        )
      }
      offered = known
      response = yield* initialize(raw, offered)
      if ("error" in response && response.error !== undefined) {
        return yield* unsupported(`the server refused MCP version ${offered} (${response.error.message}); ${versionsText}`)
      }
    }
    const result: unknown = response.result
    const chosen = typeof result === "object" && result !== null
      ? (result as { readonly protocolVersion?: unknown }).protocolVersion
      : undefined
    if (!isVersion(chosen)) {
      return yield* unsupported(
        `the server speaks MCP version ${typeof chosen === "string" ? chosen : "(none given)"}; ${versionsText} (offered ${offered})`
      )
    }
    const transport: McpClient.Transport = {
      ...raw,
      protocol: adapterFor(chosen),
      request: (message, tool) =>
        message.method === "initialize"
          ? Effect.succeed<McpSchema.JsonRpcResponse>({ jsonrpc: "2.0", id: message.id, result })
          : raw.request(message, tool)
    }
    return { version: chosen, transport }
  })

/** The client over a negotiated transport, identified as this library. */
export const makeClient = (transport: McpClient.Transport, timeout: McpClientTimeout) =>
  McpClient.make({ name: libraryName, version: libraryVersion, timeout }).pipe(
    Effect.provideService(McpClient.Transport, transport)
  )

type McpClientTimeout = Parameters<typeof McpClient.make>[0]["timeout"]
