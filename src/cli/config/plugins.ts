/**
 * Claude Code plugins: a directory with `.claude-plugin/plugin.json` (`name`, and optionally
 * `version`, `description`) bundling `commands/`, `agents/`, `skills/`, `hooks/hooks.json` and
 * `.mcp.json`. `agent-loop plugin add` copies one into the data directory's `plugins/NAME/` and
 * notes it in `plugins/installed.json`; from then on its commands (namespaced `/NAME:command`),
 * agents, skills, hooks and MCP servers are the user's own (the user added it: it is trusted as
 * the user's files are, in every workspace), unless `enabledPlugins` in a Claude Code settings file turns it
 * off (`"NAME": false` or `"NAME@marketplace": false`; the user's, and a trusted workspace's).
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { readConfined, textOf } from "../../layers/internal/readConfined.ts"
import { HooksConfig, type HooksSource } from "../../layers/claudeHooks/config.ts"
import { decodeServers, type McpServerConfigInput } from "../../layers/mcp/config.ts"
import { dataDir } from "./dataDir.ts"
import * as FrontMatter from "./frontMatter.ts"
import type { Directory } from "./markdownFiles.ts"
import { claudeUserDir } from "./sandboxSettings.ts"

/** A plugin added with `plugin add`. */
export interface Installed {
  readonly name: string
  /** What was added: a path, a git URL or an npm package. */
  readonly source: string
  readonly version?: string | undefined
  readonly description?: string | undefined
}

/** The manifest's keys the loop reads. */
const Manifest = Schema.Struct({
  name: Schema.String,
  version: Schema.optionalKey(Schema.String),
  description: Schema.optionalKey(Schema.String)
})
type Manifest = typeof Manifest.Type

const NAME = /^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$/

const MAX_JSON_BYTES = 256 * 1024

/** Where added plugins live. */
export const pluginsDir = (env: NodeJS.ProcessEnv = process.env) => nodePath.join(dataDir(env), "plugins")

/** The directory of the added plugin `name`. */
export const pluginDir = (name: string, env: NodeJS.ProcessEnv = process.env) => nodePath.join(pluginsDir(env), name)

const installedFile = (env: NodeJS.ProcessEnv) => nodePath.join(pluginsDir(env), "installed.json")

/** Why `readJson` read nothing: the file is not there (not a problem where a file is optional). */
const MISSING = "missing"

/** A JSON file inside `within`, its text through `prepare` first; why not, as one phrase. */
const readJson = (path: string, within: string, prepare: (text: string) => string = (text) => text) =>
  Effect.map(readConfined(path, { maxBytes: MAX_JSON_BYTES, within, warn: false }), (read): Result.Result<unknown, string> => {
    if (read._tag === "Missing") return Result.fail(MISSING)
    if (read._tag !== "Read") return Result.fail(read._tag === "Skipped" ? read.reason : read._tag === "Failed" ? read.message : "not a regular file")
    if (read.truncated) return Result.fail(`larger than ${MAX_JSON_BYTES} bytes`)
    try {
      return Result.succeed(JSON.parse(prepare(textOf(read) ?? "")))
    } catch {
      return Result.fail("not valid JSON")
    }
  })

/**
 * `${CLAUDE_PLUGIN_ROOT}` in a plugin's file made its directory, inserted as JSON string content so
 * that a quote or backslash in the path cannot change the file's shape.
 */
const withRoot = (dir: string) => (text: string) => text.replaceAll("${CLAUDE_PLUGIN_ROOT}", JSON.stringify(dir).slice(1, -1))

/** The plugin in `dir`: its manifest, or why it is not a plugin. */
export const manifest = (dir: string) =>
  Effect.map(readJson(nodePath.join(dir, ".claude-plugin", "plugin.json"), dir), (json): Result.Result<Manifest, string> => {
    if (Result.isFailure(json)) return Result.fail(`.claude-plugin/plugin.json: ${json.failure}`)
    const decoded = FrontMatter.decode(Manifest, json.success)
    if (Result.isFailure(decoded)) return Result.fail(`.claude-plugin/plugin.json: ${decoded.failure}`)
    if (!NAME.test(decoded.success.name)) return Result.fail(`.claude-plugin/plugin.json: name "${decoded.success.name}": lowercase letters, digits, ".", "_" and "-" only`)
    return Result.succeed(decoded.success)
  })

/** The plugins added, as `installed.json` lists them (none when it is missing or unreadable). */
export const installed = (env: NodeJS.ProcessEnv = process.env) =>
  Effect.map(readJson(installedFile(env), pluginsDir(env)), (json): ReadonlyArray<Installed> => {
    if (Result.isFailure(json)) return []
    const list = (json.success as { plugins?: unknown }).plugins
    return Array.isArray(list) ? list.filter((p): p is Installed => typeof p?.name === "string" && NAME.test(p.name) && typeof p.source === "string") : []
  })

/** Writes the list of added plugins. */
export const writeInstalled = (plugins: ReadonlyArray<Installed>, env: NodeJS.ProcessEnv = process.env) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    yield* fs.makeDirectory(pluginsDir(env), { recursive: true })
    const temp = `${installedFile(env)}.${process.pid}.tmp`
    yield* fs.writeFileString(temp, `${JSON.stringify({ plugins }, null, 2)}\n`)
    yield* fs.rename(temp, installedFile(env))
  })

/** The Claude Code settings files whose `enabledPlugins` apply: the user's, and a trusted workspace's. */
const enabledPluginsFiles = (workspace: string, trusted: boolean, env: NodeJS.ProcessEnv) => [
  { path: nodePath.join(claudeUserDir(env), "settings.json"), within: claudeUserDir(env) },
  ...(trusted
    ? [
      { path: nodePath.join(workspace, ".claude", "settings.json"), within: workspace },
      { path: nodePath.join(workspace, ".claude", "settings.local.json"), within: workspace }
    ]
    : [])
]

/** Whether `name` is turned off, and by which file: the last file that names it decides. */
export const disabledBy = (name: string, workspace: string, trusted: boolean, env: NodeJS.ProcessEnv = process.env) =>
  Effect.gen(function*() {
    let by: string | undefined
    for (const file of enabledPluginsFiles(workspace, trusted, env)) {
      const json = yield* readJson(file.path, file.within)
      if (Result.isFailure(json)) continue
      const enabled = (json.success as { enabledPlugins?: unknown }).enabledPlugins
      if (typeof enabled !== "object" || enabled === null) continue
      for (const [key, value] of Object.entries(enabled)) {
        if (key !== name && !key.startsWith(`${name}@`)) continue
        if (value === false) by = file.path
        else if (value === true) by = undefined
      }
    }
    return by
  })

/** The plugins whose contents a run in `workspace` reads: those added and not turned off. */
export const enabled = (workspace: string, trusted: boolean, env: NodeJS.ProcessEnv = process.env) =>
  Effect.gen(function*() {
    const out: Array<Installed> = []
    for (const plugin of yield* installed(env)) {
      if ((yield* disabledBy(plugin.name, workspace, trusted, env)) === undefined) out.push(plugin)
    }
    return out
  })

/**
 * The directories of `folder` (`commands`, `agents`, `skills`) in the enabled plugins, read as
 * the user's (confined to the plugin's directory); commands are namespaced by the plugin's name.
 */
export const directories = (folder: string, workspace: string, trusted: boolean, env: NodeJS.ProcessEnv = process.env) =>
  Effect.map(enabled(workspace, trusted, env), (plugins): ReadonlyArray<Directory> =>
    plugins.map((plugin) => ({
      dir: nodePath.join(pluginDir(plugin.name, env), folder),
      within: pluginDir(plugin.name, env),
      ownedByUser: false,
      namespace: plugin.name
    })))

/**
 * The MCP servers of the enabled plugins' `.mcp.json` files, `${CLAUDE_PLUGIN_ROOT}` in them being
 * the plugin's directory (as Claude Code sets it); a file that cannot be used is a problem. The
 * user added the plugin, so its servers start as the user's own do (in the sandbox when
 * `sandbox.mcpServers` is on).
 */
export const mcpServers = (workspace: string, trusted: boolean, env: NodeJS.ProcessEnv = process.env) =>
  Effect.gen(function*() {
    const servers: Record<string, McpServerConfigInput> = {}
    const problems: Array<{ readonly path: string; readonly message: string }> = []
    for (const plugin of yield* enabled(workspace, trusted, env)) {
      const dir = pluginDir(plugin.name, env)
      const path = nodePath.join(dir, ".mcp.json")
      const read = yield* readJson(path, dir, withRoot(dir))
      if (Result.isFailure(read)) {
        if (read.failure !== MISSING) problems.push({ path, message: read.failure })
        continue
      }
      const json = read.success
      const listed = (json as { mcpServers?: unknown })?.mcpServers ?? json
      if (typeof listed !== "object" || listed === null || Array.isArray(listed)) {
        problems.push({ path, message: "no mcpServers object" })
        continue
      }
      const decoded = yield* Effect.result(decodeServers(listed))
      if (Result.isFailure(decoded)) {
        problems.push({ path, message: decoded.failure.message })
        continue
      }
      for (const [name, config] of Object.entries(listed as Record<string, McpServerConfigInput>)) if (!(name in servers)) servers[name] = config
    }
    return { servers, problems }
  })

/**
 * The hooks of the enabled plugins' `hooks/hooks.json` (`{ "hooks": { EVENT: [groups] } }`, as in
 * settings), `${CLAUDE_PLUGIN_ROOT}` in them being the plugin's directory; each a source named by
 * its file, run as the user's own hooks are. A file that cannot be used is a problem.
 */
export const hooks = (workspace: string, trusted: boolean, env: NodeJS.ProcessEnv = process.env) =>
  Effect.gen(function*() {
    const sources: Array<HooksSource> = []
    const problems: Array<{ readonly path: string; readonly message: string }> = []
    for (const plugin of yield* enabled(workspace, trusted, env)) {
      const dir = pluginDir(plugin.name, env)
      const path = nodePath.join(dir, "hooks", "hooks.json")
      const read = yield* readJson(path, dir, withRoot(dir))
      if (Result.isFailure(read)) {
        if (read.failure !== MISSING) problems.push({ path, message: read.failure })
        continue
      }
      const decoded = FrontMatter.decode(HooksConfig, (read.success as { hooks?: unknown })?.hooks ?? {})
      if (Result.isFailure(decoded)) problems.push({ path, message: `hooks: ${decoded.failure}` })
      else if (Object.keys(decoded.success).length > 0) sources.push({ source: path, hooks: decoded.success })
    }
    return { sources, problems }
  })

