/**
 * `glob`: the workspace's files whose path matches a glob pattern, most recently modified first
 * (Claude Code's `Glob`), capped so a broad pattern cannot flood the context window. It walks as
 * `grep` does (`walk.ts`): `.gitignore` respected, `.git` and `node_modules` skipped, hidden files
 * included, symbolic links never followed, what the path rules deny left out.
 *
 * @example
 * ```ts
 * import { makeGlob, ToolRegistryLive } from "effect-agent-loop"
 * const tools = ToolRegistryLive.layer([makeGlob({ maxResults: 50 })])
 * ```
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { ToolError } from "../domain/errors.ts"
import * as Tool from "../domain/Tool.ts"
import { kindOfPath, openDirectory } from "./confined.ts"
import { isIgnored } from "./gitignore.ts"
import { fileMatcher } from "./globMatch.ts"
import { SKIPPED_DIRECTORIES } from "./listDir.ts"
import { guardPathRules, walkRule } from "./pathRules.ts"
import { ancestorIgnoreFiles, release, walk } from "./walk.ts"
import { DEFAULT_FILE_TOOL_TIMEOUT, Workspace } from "./workspace.ts"

/** Limits of `glob`. */
export interface GlobOptions {
  /** Most paths in one result. Default 100. */
  readonly maxResults?: number
  /** How long one call may take. Default 30 seconds. */
  readonly timeout?: Duration.Input
}

/** The default cap on paths of one `glob` result. */
export const DEFAULT_GLOB_MAX_RESULTS = 100

/** The arguments of `glob`. */
export const GlobParameters = Schema.Struct({
  pattern: Schema.String.annotate({
    description: "Glob pattern for the files to find, e.g. \"**/*.ts\" or \"src/**/*.test.ts\", relative to path; " +
      "a pattern without a `/` matches file names at any depth, e.g. \"*.md\" (\"/*.md\": only right in path)"
  }),
  path: Schema.optionalKey(
    Schema.String.annotate({ description: "Directory to search in, relative to the workspace root (default \".\")" })
  )
})

/** Files found per step of the walk, between which the event loop turns. */
const STEP = 2048

const NO_THROW = { throwIfNoEntry: false } as const

const GLOB_SYNTAX = /[*?[\]{}\\]/

/** `glob` with the given limits. */
export const makeGlob = (options: GlobOptions = {}) => {
  const maxResults = options.maxResults ?? DEFAULT_GLOB_MAX_RESULTS
  return Tool.make({
    name: "glob",
    description: "Finds files in the workspace by a glob pattern (`*` and `?` within a name, `**` for any number of " +
      "directories, `{a,b}`, `[abc]`) and returns their paths relative to the workspace root, most recently modified " +
      `first. A pattern with a \`/\` is matched against the path below \`path\`, one without against file names at any ` +
      `depth. Skips what .gitignore files ignore, ${[...SKIPPED_DIRECTORIES].join(" and ")} and symbolic links; ` +
      `includes hidden files. Returns at most ${maxResults} paths.`,
    parameters: GlobParameters,
    readOnly: true,
    idempotent: true,
    timeout: options.timeout ?? DEFAULT_FILE_TOOL_TIMEOUT,
    execute: ({ pattern: written, path: input = "." }) =>
      Effect.scoped(Effect.gen(function*() {
        const workspace = yield* Workspace
        const absolute = yield* workspace.resolve(input)
        yield* guardPathRules(workspace, "glob", input, absolute)
        if ((yield* kindOfPath(workspace.root, absolute, input)) !== "directory") {
          return yield* Effect.fail(new ToolError({ message: `"${input}" is not a directory; glob searches a directory's files` }))
        }
        // an absolute pattern inside the workspace is one from the root; `/x` and `./x` are anchored to `path`
        const fromRoot = written.startsWith(`${workspace.root}/`)
        const anchored = !fromRoot && /^\.?\//.test(written)
        const pattern = (fromRoot ? written.slice(workspace.root.length + 1) : written).replace(/^(\.?\/)+/, "")
        if (pattern === "") return yield* Effect.fail(new ToolError({ message: "The pattern is empty; give one such as \"**/*.ts\"" }))
        const matches = fileMatcher(pattern, anchored)
        const byPath = pattern.includes("/")
        const searched = fromRoot ? "." : workspace.display(absolute)
        const base = searched === "." ? "" : searched
        const below = (relative: string) => (base === "" ? relative : relative.slice(base.length + 1))

        // the pattern's leading plain directories ("src/lib/**/*.ts"): walked into directly, when
        // the walk from `path` would enter them
        const segments = byPath ? pattern.split("/") : []
        const plain: Array<string> = []
        for (const segment of segments.slice(0, -1)) {
          if (segment === "" || segment === "." || segment === ".." || GLOB_SYNTAX.test(segment)) break
          plain.push(segment)
        }
        const ruleOf = walkRule(workspace, "glob", absolute)
        let startRelative = base
        for (const name of plain) {
          const relative = startRelative === "" ? name : `${startRelative}/${name}`
          const chain = ancestorIgnoreFiles(workspace.root, relative)
          if (
            SKIPPED_DIRECTORIES.has(name) || isIgnored(chain, relative, name, true) ||
            ruleOf(nodePath.join(workspace.root, relative)) !== undefined
          ) break
          startRelative = relative
        }
        const startAbsolute = nodePath.join(workspace.root, startRelative)
        const startKind = startAbsolute === absolute
          ? "directory"
          : yield* kindOfPath(workspace.root, startAbsolute, input).pipe(Effect.orElseSucceed(() => "missing" as const))

        const found: Array<{ readonly path: string; readonly mtime: number }> = []
        let asked = 0
        if (startKind === "directory") {
          const start = yield* openDirectory(workspace.root, startAbsolute, input)
          const walker = yield* Effect.acquireRelease(
            Effect.sync(() =>
              walk({
                workspace,
                tool: "glob",
                start,
                ruleStart: absolute,
                ignore: ancestorIgnoreFiles(workspace.root, startRelative),
                include: (relative, name) => matches(below(relative), name)
              })
            ),
            (walker) => Effect.sync(() => walker.close())
          )
          while (true) {
            const items = walker.next(STEP)
            if (items === undefined) break
            for (const item of items) {
              if (item._tag === "Asked") {
                asked++
                continue
              }
              // through the directory's descriptor, as the walk found it, never following a link
              const info = fs.lstatSync(`${item.dir.via}/${item.name}`, NO_THROW)
              release(item.dir)
              if (info !== undefined && info.isFile()) found.push({ path: item.relative, mtime: info.mtimeMs })
            }
            yield* Effect.yieldNow
          }
        }

        // newest first; the walk's order (by name) among files of the same time
        const order = found.map((_, index) => index)
        order.sort((a, b) => found[b]!.mtime - found[a]!.mtime || a - b)
        const lines = order.slice(0, maxResults).map((index) => found[index]!.path)
        if (found.length > maxResults) {
          lines.push(
            `[showing the ${maxResults} most recently modified of ${found.length} files; narrow the pattern or path to see the rest]`
          )
        }
        if (asked > 0) {
          lines.push(`[${asked} file(s) or directories the permission rules ask about were left out; name them in path to be asked]`)
        }
        if (found.length === 0) lines.unshift(`No files match "${written}" in "${input}"`)
        return lines.join("\n")
      }))
  })
}

/** `glob` with default limits. */
export const glob = makeGlob()
