/**
 * `agent-loop plugin add SOURCE | list | remove NAME`: Claude Code plugins (`config/plugins.ts`).
 * `add` takes a local directory (a git checkout is one), a git URL (cloned with `git clone
 * --depth 1`) or an npm package (fetched with `npm pack --ignore-scripts`, so none of its scripts
 * run), checks its `.claude-plugin/plugin.json`, and copies it into the data directory's
 * `plugins/NAME/` (links are copied as links: reads stay confined to the plugin's directory). Its
 * hooks and MCP servers run from then on as the user's own do.
 */
import { execFile } from "node:child_process"
import * as fsp from "node:fs/promises"
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Plugins from "../config/plugins.ts"
import * as Trust from "../config/trust.ts"
import { fail } from "../terminal/failure.ts"
import { clean } from "../terminal/safeText.ts"
import { Screen } from "../terminal/screen.ts"

/** How long fetching a plugin (git, npm) may take. */
const FETCH_TIMEOUT_MS = 120_000

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error)).split("\n")[0] ?? ""

/** Runs `command args` in `cwd`, bounded by `FETCH_TIMEOUT_MS`; fails with its stderr's first line. */
const run = (command: string, args: ReadonlyArray<string>, cwd: string) =>
  Effect.tryPromise({
    try: (signal) =>
      new Promise<string>((resolve, reject) => {
        execFile(command, [...args], { cwd, timeout: FETCH_TIMEOUT_MS, signal, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
          if (error === null) resolve(stdout)
          else reject(new Error(`${command} ${args[0]}: ${stderr.trim().split("\n").at(-1) || error.message}`))
        })
      }),
    catch: messageOf
  })

const isDirectory = (path: string) => Effect.promise(() => fsp.stat(path).then((s) => s.isDirectory(), () => false))

const isGitUrl = (source: string) => /^(https?:\/\/|git@|ssh:\/\/|git:\/\/|file:\/\/)/.test(source) || source.endsWith(".git")

/** Fetches `source` into `staging` and returns the plugin's directory there. */
const fetchInto = (source: string, staging: string) =>
  Effect.gen(function*() {
    const local = nodePath.resolve(source)
    if (yield* isDirectory(local)) {
      const target = nodePath.join(staging, "plugin")
      yield* Effect.tryPromise({
        // git's own files are not the plugin's; links stay links
        try: () => fsp.cp(local, target, { recursive: true, verbatimSymlinks: true, filter: (from) => nodePath.basename(from) !== ".git" }),
        catch: (error) => `cannot copy ${local}: ${messageOf(error)}`
      })
      return target
    }
    if (isGitUrl(source)) {
      yield* run("git", ["clone", "--depth", "1", "--quiet", "--", source, "plugin"], staging)
      yield* Effect.promise(() => fsp.rm(nodePath.join(staging, "plugin", ".git"), { recursive: true, force: true }))
      return nodePath.join(staging, "plugin")
    }
    const packed = yield* run("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", staging, "--", source], staging)
    const tarball = packed.trim().split("\n").at(-1) ?? ""
    if (tarball === "") return yield* Effect.fail(`npm pack ${source}: it named no package file`)
    yield* run("tar", ["-xzf", nodePath.join(staging, nodePath.basename(tarball)), "-C", staging], staging)
    return nodePath.join(staging, "package")
  })

/** What a plugin's directory holds, in one line. */
const contents = (dir: string) =>
  Effect.gen(function*() {
    const count = (folder: string, test: (name: string) => boolean) =>
      Effect.promise(() => fsp.readdir(nodePath.join(dir, folder), { recursive: true }).then((names) => names.filter(test).length, () => 0))
    const exists = (file: string) => Effect.promise(() => fsp.access(nodePath.join(dir, file)).then(() => true, () => false))
    const parts = [
      `${yield* count("commands", (n) => n.endsWith(".md"))} commands`,
      `${yield* count("agents", (n) => n.endsWith(".md") && !n.includes(nodePath.sep))} agents`,
      `${yield* count("skills", (n) => n.endsWith(`${nodePath.sep}SKILL.md`))} skills`
    ]
    if (yield* exists(nodePath.join("hooks", "hooks.json"))) parts.push("hooks")
    if (yield* exists(".mcp.json")) parts.push("MCP servers")
    return parts.join(", ")
  })

/** `plugin add SOURCE`. */
export const add = (source: string) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const root = Plugins.pluginsDir()
    yield* Effect.promise(() => fsp.mkdir(root, { recursive: true }))
    const staging = yield* Effect.promise(() => fsp.mkdtemp(nodePath.join(root, ".adding-")))
    const added = yield* Effect.gen(function*() {
      const dir = yield* fetchInto(source, staging)
      const manifest = yield* Plugins.manifest(dir)
      if (Result.isFailure(manifest)) return yield* Effect.fail(`${source} is not a Claude Code plugin: ${manifest.failure}`)
      const { description, name, version } = manifest.success
      const target = Plugins.pluginDir(name)
      const before = yield* Plugins.installed()
      yield* Effect.promise(() => fsp.rm(target, { recursive: true, force: true }))
      yield* Effect.tryPromise({ try: () => fsp.rename(dir, target), catch: (error) => `cannot move it into ${target}: ${messageOf(error)}` })
      const entry: Plugins.Installed = { name, source, ...(version === undefined ? {} : { version }), ...(description === undefined ? {} : { description }) }
      yield* Effect.mapError(Plugins.writeInstalled([...before.filter((p) => p.name !== name), entry]), messageOf)
      return { name, version, replaced: before.some((p) => p.name === name), target }
    }).pipe(Effect.ensuring(Effect.promise(() => fsp.rm(staging, { recursive: true, force: true }))))
    yield* screen.text(`${clean(
      `${added.replaced ? "replaced" : "added"} plugin ${added.name}${added.version === undefined ? "" : ` ${added.version}`} from ${source}: ${yield* contents(added.target)}`
    )}\n`)
  }).pipe(Effect.catch((message: string) => fail(`plugin add: ${message}`)))

/** `plugin list`: the plugins added, whether a run in the workspace reads them, and what they hold. */
export const list = (workspace: string) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const plugins = yield* Plugins.installed()
    if (plugins.length === 0) return yield* screen.text("no plugins (agent-loop plugin add PATH | GIT-URL | NPM-PACKAGE)\n")
    const dir = nodePath.resolve(workspace)
    const trusted = yield* Trust.isTrusted(dir)
    for (const plugin of plugins) {
      const off = yield* Plugins.disabledBy(plugin.name, dir, trusted)
      const state = off === undefined ? "enabled" : `disabled by enabledPlugins in ${off}`
      yield* screen.text(`${clean(
        `${plugin.name}${plugin.version === undefined ? "" : ` ${plugin.version}`}  ${state}  ${yield* contents(Plugins.pluginDir(plugin.name))}  from ${plugin.source}`
      )}\n`)
    }
  })

/** `plugin remove NAME`. */
export const remove = (name: string) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const plugins = yield* Plugins.installed()
    if (!plugins.some((p) => p.name === name)) {
      return yield* fail(`plugin remove: no plugin named ${name}${plugins.length === 0 ? "" : `; the plugins: ${plugins.map((p) => p.name).join(", ")}`}`)
    }
    yield* Effect.orDie(Plugins.writeInstalled(plugins.filter((p) => p.name !== name)))
    yield* Effect.promise(() => fsp.rm(Plugins.pluginDir(name), { recursive: true, force: true }))
    yield* screen.text(`${clean(`removed plugin ${name}`)}\n`)
  })
