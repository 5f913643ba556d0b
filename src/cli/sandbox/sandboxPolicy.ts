/**
 * What the sandbox confines a run's commands to, compiled in one place from the settings and the
 * permission rules (the sandbox itself adds the workspace, git's directories, the protected
 * locations and the credentials it always hides):
 *
 * - unreadable: the paths of `Read(…)` deny rules and `sandbox.filesystem.denyRead`;
 * - read-only: the paths of `Edit(…)` and `Write(…)` deny rules and `sandbox.filesystem.denyWrite`;
 * - writable besides the workspace: `sandbox.filesystem.allowWrite` and
 *   `permissions.additionalDirectories`;
 * - the hosts the proxy lets through: the domains of `WebFetch(domain:…)` allow rules and
 *   `sandbox.network.allowedDomains` (none: no network at all).
 *
 * The sandbox binds paths, not patterns, so a rule with a glob (`Read(**\/*.pem)`, `Read(.env)`,
 * which matches in every directory) is looked up now: the files that match when the run starts are
 * hidden; one created later is not. The search stops after `MAX_SEARCHED` entries, saying so.
 */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import type { SandboxChoice } from "../config/sandboxSettings.ts"
import { pathMatch } from "../permissions/glob.ts"
import { canonicalHost, namesTool, type Rule } from "../permissions/rules.ts"

/** The inputs the CLI gives the sandbox's policy. */
export interface SandboxInputs {
  /** More writable paths (absolute). */
  readonly allowWrite: ReadonlyArray<string>
  /** Read-only paths inside writable ones (absolute). */
  readonly denyWrite: ReadonlyArray<string>
  /** Unreadable paths (absolute). */
  readonly denyRead: ReadonlyArray<string>
  /** Host patterns the proxy lets through (`example.com`, `*.example.com`). */
  readonly allowedHosts: ReadonlyArray<string>
  /** What could not be followed, one line each. */
  readonly notes: ReadonlyArray<string>
}

/** The most directory entries looked at for the globs of one run. */
export const MAX_SEARCHED = 20_000

const GLOB = /[*?[]/

const segments = (path: string): Array<string> => path.split("/").filter((s) => s !== "" && s !== ".")

/**
 * A path rule's specifier as absolute glob segments, read as the rules read it (`rules.ts`):
 * `//abs`, `~/home`, anchored in the workspace (`./x`, `/x`, `a/b`), or anywhere in it (`.env`).
 */
export const ruleGlob = (specifier: string, workspace: string, home: string): ReadonlyArray<string> => {
  let pattern = specifier.endsWith("/") ? `${specifier}**` : specifier
  if (pattern.startsWith("//")) return segments(pattern.slice(1))
  if (pattern.startsWith("~/")) return [...segments(home), ...segments(pattern.slice(2))]
  const anchored = pattern.startsWith("./") || pattern.startsWith("/") || pattern.slice(0, -1).includes("/")
  if (pattern.startsWith("./")) pattern = pattern.slice(2)
  return [...segments(workspace), ...(anchored ? [] : ["**"]), ...segments(pattern)]
}

/** A path of a `sandbox` setting: absolute, `~/` under the home directory, else from the workspace. */
export const settingPath = (path: string, workspace: string, home: string): string =>
  path.startsWith("~/") || path === "~" ? nodePath.join(home, path.slice(1)) : nodePath.resolve(workspace, path)

/** A bounded search of the paths matching glob segments; `budget.left` is shared by the searches of one run. */
const search = async (pattern: ReadonlyArray<string>, budget: { left: number; exhausted: boolean }): Promise<ReadonlyArray<string>> => {
  // a trailing ** covers a directory's whole tree: the directory itself is what gets hidden
  let core = pattern
  while (core.length > 0 && core[core.length - 1] === "**") core = core.slice(0, -1)
  const first = core.findIndex((s) => GLOB.test(s))
  if (first < 0) return [`/${core.join("/")}`]
  const found: Array<string> = []
  const walk = async (dir: ReadonlyArray<string>): Promise<void> => {
    let entries: Array<import("node:fs").Dirent>
    try {
      entries = await fs.readdir(`/${dir.join("/")}`, { withFileTypes: true })
    } catch {
      return
    }
    for (const entry of entries) {
      if (budget.left <= 0) {
        budget.exhausted = true
        return
      }
      budget.left--
      const path = [...dir, entry.name]
      if (pathMatch(core, path) || pathMatch(pattern, path)) {
        found.push(`/${path.join("/")}`)
        continue
      }
      // links are not followed: the sandbox hides what lies at the path, wherever it points
      if (entry.isDirectory() && !entry.isSymbolicLink()) await walk(path)
    }
  }
  await walk(core.slice(0, first))
  return found
}

/** A rule's host as the proxy matches it: a glob lowered, one host in its canonical spelling (`0x7f.1` is `127.0.0.1`). */
const hostPattern = (pattern: string): string => (/[*?]/.test(pattern) ? pattern.toLowerCase() : canonicalHost(pattern))

/** Whether a rule is a deny rule on one of the built-in tools `names`. */
const denies = (rule: Rule, names: ReadonlyArray<string>) =>
  rule.kind === "deny" && rule.specifier !== undefined && names.some((name) => namesTool(rule, { name }))

/** The inputs of a run in `workspace` under `rules` and the `sandbox` settings. */
export const compile = (options: {
  readonly workspace: string
  readonly rules: ReadonlyArray<Rule>
  readonly sandbox: SandboxChoice
  readonly home?: string
}): Effect.Effect<SandboxInputs> =>
  Effect.promise(async () => {
    const { rules, sandbox, workspace } = options
    const home = options.home ?? os.homedir()
    const budget = { left: MAX_SEARCHED, exhausted: false }
    const notes: Array<string> = []
    const unique = (paths: ReadonlyArray<string>) => [...new Set(paths)]
    const fromRules = async (names: ReadonlyArray<string>) => {
      const paths: Array<string> = []
      for (const rule of rules.filter((r) => denies(r, names))) paths.push(...await search(ruleGlob(rule.specifier!, workspace, home), budget))
      return paths
    }
    const fromSetting = async (list: ReadonlyArray<string>) => {
      const paths: Array<string> = []
      for (const entry of list) {
        const path = settingPath(entry, workspace, home)
        paths.push(...GLOB.test(path) ? await search(segments(path), budget) : [path])
      }
      return paths
    }
    const denyRead = unique([...await fromRules(["read_file", "grep", "glob", "list_dir"]), ...await fromSetting(sandbox.denyRead)])
    const denyWrite = unique([...await fromRules(["write_file", "edit_file"]), ...await fromSetting(sandbox.denyWrite)])
    const allowWrite: Array<string> = []
    for (const entry of sandbox.allowWrite) {
      const path = settingPath(entry, workspace, home)
      if (GLOB.test(path)) notes.push(`sandbox: ${entry} in allowWrite is a pattern; only plain paths can be made writable, so it is left out`)
      else if (!allowWrite.includes(path)) allowWrite.push(path)
    }
    if (budget.exhausted) {
      notes.push(
        `sandbox: stopped looking for the files of the deny rules' patterns after ${MAX_SEARCHED} entries; files further down stay readable by commands (name them in the rules without a pattern)`
      )
    }
    const fetches = (r: Rule) => namesTool(r, { name: "web_fetch" })
    const deniedHosts = rules.filter((r) => r.kind === "deny" && fetches(r))
      .flatMap((r) => r.specifier?.startsWith("domain:") ? [hostPattern(r.specifier.slice("domain:".length))] : [])
    const allowedHosts = unique([
      ...rules.filter((r) => r.kind === "allow" && fetches(r))
        .flatMap((r) => r.specifier?.startsWith("domain:") ? [hostPattern(r.specifier.slice("domain:".length))] : []),
      ...sandbox.allowedDomains.map((d) => d.toLowerCase())
    ]).filter((host) => host !== "" && !deniedHosts.includes(host))
    return { allowWrite, denyWrite, denyRead, allowedHosts, notes }
  })
