/**
 * The API server's bearer token for `agent-loop serve`: `AGENT_LOOP_SERVER_TOKEN`, else the first
 * line of `--token-file FILE`, else the one kept in the data directory (`server-token`, mode 0600
 * in the 0700 directory), generated at the first start; the caller prints a generated one once.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { makeToken } from "../../server/Server.ts"
import { fail } from "../terminal/failure.ts"

/** The environment variable that gives the token. */
export const TOKEN_ENV = "AGENT_LOOP_SERVER_TOKEN"

/** The file the generated token is kept in. */
export const tokenPath = (dataDir: string): string => nodePath.join(dataDir, "server-token")

/** Where the token came from; `generated`: written now, to be printed once. */
export interface ServerToken {
  readonly token: Redacted.Redacted<string>
  readonly source: "environment" | "file" | "kept" | "generated"
  readonly path?: string
}

/** A token must be long enough to be a secret: 16 characters at least, no spaces. */
const usable = (text: string) => text.length >= 16 && !/\s/.test(text)

/** The token: from the environment, `--token-file`, the kept file, or generated into it. */
export const resolve = (options: { readonly tokenFile: Option.Option<string>; readonly dataDir: string; readonly env?: NodeJS.ProcessEnv }) =>
  Effect.gen(function*() {
    const fromEnv = (options.env ?? process.env)[TOKEN_ENV]
    if (fromEnv !== undefined && fromEnv !== "") {
      if (!usable(fromEnv)) return yield* fail(`${TOKEN_ENV} must be at least 16 characters with no spaces`)
      return { token: Redacted.make(fromEnv), source: "environment" } satisfies ServerToken
    }
    if (Option.isSome(options.tokenFile)) {
      const path = options.tokenFile.value
      const text = yield* Effect.try({ try: () => fs.readFileSync(path, "utf8"), catch: (error) => String((error as Error).message) }).pipe(
        Effect.catch((message) => fail(`--token-file: cannot read ${path}: ${message}`))
      )
      const line = text.split(/\r?\n/)[0]!.trim()
      if (!usable(line)) return yield* fail(`--token-file: the first line of ${path} must be a token of at least 16 characters with no spaces`)
      return { token: Redacted.make(line), source: "file", path } satisfies ServerToken
    }
    const path = tokenPath(options.dataDir)
    const kept = yield* Effect.sync(() => {
      try {
        return fs.readFileSync(path, "utf8").trim()
      } catch {
        return undefined
      }
    })
    if (kept !== undefined && usable(kept)) return { token: Redacted.make(kept), source: "kept", path } satisfies ServerToken
    const token = makeToken()
    yield* Effect.try({
      try: () => {
        fs.mkdirSync(options.dataDir, { recursive: true, mode: 0o700 })
        // written to a new file only its owner may read, then moved into place
        const temporary = `${path}.${process.pid}.tmp`
        fs.writeFileSync(temporary, `${Redacted.value(token)}\n`, { mode: 0o600, flag: "wx" })
        fs.renameSync(temporary, path)
      },
      catch: (error) => String((error as Error).message)
    }).pipe(Effect.catch((message) => fail(`cannot keep the server's token in ${path}: ${message}`)))
    return { token, source: "generated", path } satisfies ServerToken
  })
