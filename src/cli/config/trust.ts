/**
 * Trusted workspaces. What a workspace holds can run code or redirect the CLI — file hooks
 * (`.agents/hooks`), settings (`.agent-loop/settings.json`: base URL, approval, MCP servers; and
 * Claude Code's `.claude/settings.json` and `.claude/settings.local.json`: hooks, permission rules;
 * the MCP files `.mcp.json`, `.vscode/mcp.json` and `.cursor/mcp.json`: programs to start) —
 * and a model with the file tools can write there, so none of it takes effect until the user has
 * trusted the workspace: `agent-loop trust [DIR]` records it in
 * `$XDG_CONFIG_HOME/agent-loop/trusted-workspaces.json`. A trusted directory trusts its
 * subdirectories too. Untrusted, those files are skipped with one warning saying how to trust.
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { decodeFile, MAX_CONFIG_BYTES, WORKSPACE_CONFIGS } from "../../layers/mcp/config.ts"
import { readConfined, textOf } from "../../layers/internal/readConfined.ts"
import { fail } from "../terminal/failure.ts"
import { Screen } from "../terminal/screen.ts"
import { configDir, projectSettingsPath } from "./settingsFile.ts"

/** The file of trusted directories. */
export const trustFile = (env: NodeJS.ProcessEnv = process.env): string => nodePath.join(configDir(env), "trusted-workspaces.json")

const TrustFile = Schema.fromJsonString(Schema.Struct({ trusted: Schema.Array(Schema.String) }))
const decodeTrustFile = Schema.decodeUnknownEffect(TrustFile)
const encodeTrustFile = Schema.encodeEffect(TrustFile)

/** The workspace files that take effect only when the workspace is trusted, with what they are. */
export const workspaceConfig = (workspace: string): ReadonlyArray<readonly [label: string, path: string]> => [
  [".agents/hooks", nodePath.join(workspace, ".agents", "hooks")],
  [".agent-loop/settings.json", projectSettingsPath(workspace)],
  [".claude/settings.json", nodePath.join(workspace, ".claude", "settings.json")],
  [".claude/settings.local.json", nodePath.join(workspace, ".claude", "settings.local.json")],
  ...WORKSPACE_CONFIGS.map((file) => [file, nodePath.join(workspace, file)] as const)
]

/** The largest trust file read. */
export const MAX_TRUST_FILE_BYTES = 4 * 1024 * 1024

/** The trusted directories (absolute, real paths); none when the file does not exist (or leads out of the config directory by a link). */
export const list = (env: NodeJS.ProcessEnv = process.env) =>
  Effect.gen(function*() {
    const file = trustFile(env)
    const read = yield* readConfined(file, { within: configDir(env), maxBytes: MAX_TRUST_FILE_BYTES })
    const text = textOf(read)
    if (text === undefined || read._tag !== "Read") return [] as ReadonlyArray<string>
    if (read.truncated) return yield* fail(`${file}: larger than ${MAX_TRUST_FILE_BYTES} bytes; fix or delete it`)
    const decoded = yield* decodeTrustFile(text).pipe(
      Effect.catch(() => fail(`${file}: expected {"trusted": ["/a/directory", ...]}; fix or delete it`))
    )
    return decoded.trusted
  })

/** `dir` as the real, absolute path trust is recorded under; a directory that does not exist fails. */
export const canonical = (dir: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const real = yield* fs.realPath(nodePath.resolve(dir)).pipe(Effect.catch(() => fail(`no such directory: ${dir}`)))
    const info = yield* fs.stat(real).pipe(Effect.catch((error) => fail(`${dir}: ${error.message}`)))
    if (info.type !== "Directory") return yield* fail(`not a directory: ${dir}`)
    return real
  })

const within = (dir: string, root: string) => dir === root || dir.startsWith(root.endsWith(nodePath.sep) ? root : `${root}${nodePath.sep}`)

/** The trusted directory that covers `dir` (itself or a parent), if any. */
export const trustedBy = (dir: string, trusted: ReadonlyArray<string>): string | undefined =>
  trusted.filter((root) => within(dir, root)).sort((a, b) => b.length - a.length)[0]

/** Whether the workspace `dir` is trusted. A directory that cannot be resolved is not. */
export const isTrusted = (dir: string, env: NodeJS.ProcessEnv = process.env) =>
  Effect.gen(function*() {
    const real = yield* Effect.option(canonical(dir))
    return Option.isSome(real) && trustedBy(real.value, yield* list(env)) !== undefined
  })

/** Writes the list through a temporary file renamed into place, so a crash never leaves half a file. */
const save = (trusted: ReadonlyArray<string>, env: NodeJS.ProcessEnv) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const file = trustFile(env)
    const text = yield* encodeTrustFile({ trusted: [...trusted].sort() }).pipe(Effect.orDie)
    const temp = `${file}.${process.pid}.tmp`
    yield* fs.makeDirectory(nodePath.dirname(file), { recursive: true })
    yield* fs.writeFileString(temp, `${text}\n`)
    yield* fs.rename(temp, file)
  }).pipe(Effect.catch((error) => fail(`cannot write ${trustFile(env)}: ${error.message}`)))

/** `agent-loop trust [DIR]`: records DIR (default the current directory) as trusted. */
export const trust = (dir: string, env: NodeJS.ProcessEnv = process.env) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const real = yield* canonical(dir)
    const trusted = yield* list(env)
    if (!trusted.includes(real)) yield* save([...trusted, real], env)
    yield* screen.line(`trusted ${real}: its file hooks, settings and MCP config will be used`)
  })

/** `agent-loop untrust [DIR]`: forgets DIR; says so when a parent still trusts it. */
export const untrust = (dir: string, env: NodeJS.ProcessEnv = process.env) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const real = yield* canonical(dir)
    const trusted = yield* list(env)
    if (trusted.includes(real)) yield* save(trusted.filter((root) => root !== real), env)
    const still = trustedBy(real, trusted.filter((root) => root !== real))
    yield* screen.line(
      still !== undefined
        ? `${real} is still trusted through ${still} (agent-loop untrust ${still})`
        : trusted.includes(real)
        ? `no longer trusted: ${real}`
        : `${real} was not trusted`
    )
  })

/** `agent-loop trust --list`: the trusted directories, one per line on stdout. */
export const listCommand = (env: NodeJS.ProcessEnv = process.env) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const trusted = yield* list(env)
    if (trusted.length === 0) return yield* screen.line(`no trusted workspaces yet (${trustFile(env)})`)
    for (const root of trusted) yield* screen.text(`${root}\n`)
  })

/**
 * Whether an MCP file names no server (empty, or an empty `mcpServers`/`servers`): nothing in it
 * would run, so there is nothing to trust. One that cannot be read or decoded is not.
 */
const namesNoServer = (workspace: string, path: string) =>
  Effect.gen(function*() {
    const text = textOf(yield* readConfined(path, { within: workspace, maxBytes: MAX_CONFIG_BYTES, warn: false }))
    if (text === undefined) return false
    if (text.trim() === "") return true
    return Object.keys(yield* decodeFile(text, path)).length === 0
  }).pipe(Effect.orElseSucceed(() => false))

/**
 * For an untrusted workspace: the one warning line naming what was skipped and how to trust it,
 * or `undefined` when it holds nothing that needs trust (an MCP file without servers is nothing).
 */
export const skippedWarning = (workspace: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const present: Array<string> = []
    for (const [label, path] of workspaceConfig(workspace)) {
      if (!(yield* Effect.orElseSucceed(fs.exists(path), () => false))) continue
      if (WORKSPACE_CONFIGS.includes(label) && (yield* namesNoServer(workspace, path))) continue
      present.push(label)
    }
    if (present.length === 0) return undefined
    // deny and ask rules only narrow, so a settings file's still apply (`settingsLevels.ts`)
    const narrows = present.some((label) => label.endsWith(".json") && !WORKSPACE_CONFIGS.includes(label))
    return `workspace ${workspace} is not trusted, so its ${present.join(" and ")} ${present.length === 1 ? "was" : "were"} skipped` +
      `${narrows ? " (but for their deny and ask rules)" : ""}; to use ${present.length === 1 ? "it" : "them"}, run: agent-loop trust ${workspace}`
  })
