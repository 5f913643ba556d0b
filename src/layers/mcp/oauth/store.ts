/**
 * What an MCP server's OAuth authorization leaves behind: the client registered with its
 * authorization server, where to refresh, and the tokens. Kept per server URL by an `OAuthStore`;
 * `fileStore` keeps them in one JSON file, 0600 (in the CLI, the data directory's
 * `mcp-oauth.json`). Tokens and client secrets are `Redacted` from the moment they are read, so
 * no log, event or error shows them.
 */
import * as fsp from "node:fs/promises"
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Semaphore from "effect/Semaphore"

const Secret = Schema.RedactedFromValue(Schema.String)

/** The tokens of one server; `expiresAt` in epoch milliseconds (on the Effect Clock), when the server said. */
export const OAuthTokens = Schema.Struct({
  accessToken: Secret,
  refreshToken: Schema.optionalKey(Secret),
  tokenType: Schema.String,
  expiresAt: Schema.optionalKey(Schema.Number),
  scope: Schema.optionalKey(Schema.String)
})
export type OAuthTokens = typeof OAuthTokens.Type

/** The client registered (RFC 7591) for one server, and the redirect URI it registered. */
export const OAuthClient = Schema.Struct({
  clientId: Schema.String,
  clientSecret: Schema.optionalKey(Secret),
  /** `none`, `client_secret_basic` or `client_secret_post`: how the token endpoint is told who asks. */
  authMethod: Schema.String,
  redirectUri: Schema.String
})
export type OAuthClient = typeof OAuthClient.Type

/** One server's authorization. */
export const OAuthEntry = Schema.Struct({
  /** The authorization server (its issuer URL) the client and tokens belong to. */
  issuer: Schema.String,
  tokenEndpoint: Schema.String,
  /** The RFC 8707 resource indicator sent with every token request, when the server published one. */
  resource: Schema.optionalKey(Schema.String),
  client: OAuthClient,
  tokens: OAuthTokens
})
export type OAuthEntry = typeof OAuthEntry.Type

const OAuthFile = Schema.Record(Schema.String, OAuthEntry)

/** Where the authorizations of MCP servers are kept, by server URL. */
export interface OAuthStore {
  readonly get: (serverUrl: string) => Effect.Effect<OAuthEntry | undefined>
  /** Replaces (or with `undefined`, forgets) one server's entry. */
  readonly set: (serverUrl: string, entry: OAuthEntry | undefined) => Effect.Effect<void, OAuthStoreError>
}

/** The store could not be written. */
export class OAuthStoreError extends Schema.TaggedError<OAuthStoreError>()("OAuthStoreError", {
  message: Schema.String
}) {}

/** A store in memory, for a program that keeps nothing (or tests). */
export const memoryStore = (initial: Readonly<Record<string, OAuthEntry>> = {}): OAuthStore => {
  const entries = new Map(Object.entries(initial))
  return {
    get: (serverUrl) => Effect.sync(() => entries.get(serverUrl)),
    set: (serverUrl, entry) => Effect.sync(() => void (entry === undefined ? entries.delete(serverUrl) : entries.set(serverUrl, entry)))
  }
}

const decodeFile = Schema.decodeUnknownEffect(Schema.fromJsonString(OAuthFile))
const encodeFile = Schema.encodeEffect(Schema.fromJsonString(OAuthFile))

/** The largest file read: a few entries take a few KiB. */
const MAX_FILE_BYTES = 1024 * 1024

/**
 * A store in one JSON file, read afresh on every `get` (another process may have refreshed a
 * token), written whole through a temporary file renamed into place, 0600 in a 0700 directory. A
 * file that cannot be read or decoded counts as empty (the user logs in again); a link is not followed.
 */
export const fileStore = (path: string): OAuthStore => {
  const lock = Semaphore.makeUnsafe(1)
  const read = Effect.promise(async (): Promise<unknown> => {
    try {
      const handle = await fsp.open(path, fsp.constants.O_RDONLY | fsp.constants.O_NOFOLLOW)
      try {
        const info = await handle.stat()
        if (!info.isFile() || info.size > MAX_FILE_BYTES) return "{}"
        return await handle.readFile("utf8")
      } finally {
        await handle.close()
      }
    } catch {
      return "{}"
    }
  }).pipe(Effect.flatMap((text) => decodeFile(text)), Effect.orElseSucceed(() => ({}) as Readonly<Record<string, OAuthEntry>>))
  return {
    get: (serverUrl) => Effect.map(read, (entries) => entries[serverUrl]),
    set: (serverUrl, entry) =>
      lock.withPermits(1)(Effect.gen(function*() {
        const { [serverUrl]: _old, ...rest } = yield* read
        const text = yield* encodeFile(entry === undefined ? rest : { ...rest, [serverUrl]: entry }).pipe(
          Effect.mapError((error) => new OAuthStoreError({ message: `cannot encode the MCP authorizations: ${error.message}` }))
        )
        yield* Effect.tryPromise({
          try: async () => {
            await fsp.mkdir(nodePath.dirname(path), { recursive: true, mode: 0o700 })
            const temporary = `${path}.${process.pid}.tmp`
            await fsp.writeFile(temporary, `${text}\n`, { mode: 0o600 })
            await fsp.chmod(temporary, 0o600)
            await fsp.rename(temporary, path)
          },
          catch: (error) => new OAuthStoreError({ message: `cannot write ${path}: ${error instanceof Error ? error.message : String(error)}` })
        })
      }))
  }
}
