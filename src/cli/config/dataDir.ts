/**
 * Where the CLI keeps its data: `$AGENT_LOOP_DATA_DIR` (tests), else `$XDG_DATA_HOME/agent-loop`,
 * else `~/.local/share/agent-loop`. It holds the sessions (`sessions.db`, or `sessions/` of the
 * JSON Lines store: `storeChoice.ts`), the undo history, MCP servers' OAuth tokens, and the key of the session used last in each workspace (for `--continue`).
 *
 * Conversations are private: the directory is 0700 (an existing one is tightened, it may predate
 * this rule) and the files in it 0600.
 */
import { createHash } from "node:crypto"
import * as nodePath from "node:path"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import { xdgBase } from "../../layers/fileHooks/discover.ts"
import { readConfined, textOf } from "../../layers/internal/readConfined.ts"

/** The data directory for an environment. */
export const dataDir = (env: NodeJS.ProcessEnv = process.env): string => {
  const own = env["AGENT_LOOP_DATA_DIR"]
  if (own !== undefined && own !== "") return nodePath.resolve(own)
  return nodePath.join(xdgBase("XDG_DATA_HOME", nodePath.join(".local", "share"), env), "agent-loop")
}

/** The directory of the session files. */
export const sessionsDir = (data: string): string => nodePath.join(data, "sessions")

/** Where the undo history lives (`FileHistoryDir`; `agent-loop undo`). */
export const undoDir = (data: string): string => nodePath.join(data, "undo")

/** Where the OAuth authorizations of remote MCP servers are kept (`agent-loop mcp login`; 0600). */
export const mcpOAuthFile = (data: string): string => nodePath.join(data, "mcp-oauth.json")

/** Where the sessions' transcripts in Claude Code's shape are kept, for hooks' `transcript_path`. */
export const transcriptsDir = (data: string): string => nodePath.join(data, "transcripts")

/**
 * The file naming the session used last in `workspace`: one per workspace (by the SHA-256 of its
 * absolute path), so `--continue` never picks up another project's conversation.
 */
const lastSessionFile = (data: string, workspace: string) =>
  nodePath.join(data, "last-sessions", createHash("sha256").update(workspace, "utf8").digest("hex").slice(0, 32))

/**
 * The chat's input history for `workspace` (up/down, Ctrl-R): one private file per workspace (by
 * the SHA-256 of its path), so a project's inputs are recalled in that project.
 */
export const chatHistoryFile = (data: string, workspace: string): string =>
  nodePath.join(data, "chat-history", `${createHash("sha256").update(workspace, "utf8").digest("hex").slice(0, 32)}.jsonl`)

/** The session used last in `workspace`, if any. */
export const readLastSession = (data: string, workspace: string): Effect.Effect<Option.Option<string>, never, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    // a key is short: a file that says otherwise (a link to a device, say) is not read past 4 KiB
    const read = yield* readConfined(lastSessionFile(data, workspace), { maxBytes: 4096 })
    const text = read._tag === "Read" && !read.truncated ? textOf(read) : undefined
    return Option.filter(Option.fromNullishOr(text?.trim()), (key) => key !== "")
  })

const PRIVATE_DIR = 0o700
const PRIVATE_FILE = 0o600
const OPEN_TO_OTHERS = 0o077

/** Creates the data directory (0700), or makes an existing one private. */
export const ensureDataDir = (data: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    yield* fs.makeDirectory(data, { recursive: true, mode: PRIVATE_DIR })
    if (((yield* fs.stat(data)).mode & OPEN_TO_OTHERS) !== 0) yield* fs.chmod(data, PRIVATE_DIR)
  })

/**
 * Remembers `key` as the session used last in `workspace` (a 0600 file in a 0700 directory); a
 * failure is only a warning (the turn matters more).
 */
export const writeLastSession = (data: string, workspace: string, key: string): Effect.Effect<void, never, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const file = lastSessionFile(data, workspace)
    yield* ensureDataDir(data)
    yield* ensureDataDir(nodePath.dirname(file))
    yield* fs.writeFileString(file, `${key}\n`, { mode: PRIVATE_FILE })
    yield* fs.chmod(file, PRIVATE_FILE)
  }).pipe(Effect.catch((error) => Effect.logWarning(`cannot remember the session for --continue: ${error.message}`)))

const pad = (n: number) => String(n).padStart(2, "0")

/** A fresh session key: local date and time plus a random suffix, e.g. `20250114-093012-k3f9`. */
export const newSessionKey: Effect.Effect<string> = Effect.gen(function*() {
  const d = new Date(yield* Clock.currentTimeMillis)
  const suffix = (yield* Random.nextIntBetween(0, 36 ** 4)).toString(36).padStart(4, "0")
  return `${d.getFullYear()}${pad(d.getMonth() + 1)}${pad(d.getDate())}-${pad(d.getHours())}${pad(d.getMinutes())}${pad(d.getSeconds())}-${suffix}`
})
