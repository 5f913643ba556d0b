/**
 * Agent Skills (the agentskills.io format, as Claude Code reads it): a directory holding a
 * `SKILL.md` (front matter `name` and `description`, required; `allowed-tools`, optional; the body
 * is the skill's instructions) and any files it bundles. Found in `~/.claude/skills/*` and
 * `~/.config/agent-loop/skills/*`, and in a trusted workspace `.claude/skills/*` and
 * `.agent-loop/skills/*`, and the enabled plugins' `skills/*` (`plugins.ts`; a later one replaces a
 * skill of the same name, a plugin's first). The model is offered
 * their names and descriptions, and loads one with the `skill` tool (`skillTool.ts`).
 *
 * `SKILL.md` is read as agent files are (`markdownFiles.ts`): confined to the directory it is
 * found in, a workspace's owned by the user, at most 64 KiB. A skill that cannot be used is a
 * problem saying why, one line.
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { readConfined, textOf } from "../../layers/internal/readConfined.ts"
import * as FrontMatter from "./frontMatter.ts"
import * as MarkdownFiles from "./markdownFiles.ts"
import * as Plugins from "./plugins.ts"
import type { SkillDefinition } from "./skillTool.ts"

/** The largest `SKILL.md` read. */
export const MAX_SKILL_FILE_BYTES = 64 * 1024

/** The most bundled files listed for one skill. */
const MAX_LISTED_FILES = 100

/** A skill and where it came from. */
export interface Skill extends SkillDefinition {
  /** Its `SKILL.md`. */
  readonly path: string
  /** Permission rules (`allow`) its `allowed-tools` gives once it is loaded. */
  readonly allowedTools?: ReadonlyArray<string>
}

/** A skill left out, and why. */
export type SkillProblem = MarkdownFiles.FileProblem

/** agentskills.io's names: lowercase letters, digits and hyphens, at most 64. */
const NAME = /^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/

const Front = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  "allowed-tools": Schema.optionalKey(Schema.Union([Schema.String, Schema.Array(Schema.String)]))
})

/** Parses the `SKILL.md` of the skill directory `dir` (its bundled files given). */
export const parse = (dir: string, text: string, files: ReadonlyArray<string> = []): Result.Result<Skill, string> => {
  const parts = FrontMatter.split(text)
  if (Result.isFailure(parts)) return Result.fail(parts.failure)
  if (parts.success.data === undefined) return Result.fail("SKILL.md must start with a `---` YAML front matter block (name, description)")
  const decoded = FrontMatter.decode(Front, parts.success.data)
  if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
  const front = decoded.success
  const name = front.name.trim()
  if (!NAME.test(name)) return Result.fail(`name "${name}": lowercase letters, digits and "-" only, at most 64`)
  const description = front.description.trim()
  if (description === "") return Result.fail("description: empty (it is what tells the model when to use the skill)")
  if (description.length > 1024) return Result.fail("description: longer than 1024 characters")
  if (parts.success.body === "") return Result.fail("the body (the skill's instructions) is empty")
  return Result.succeed({
    name,
    description,
    body: parts.success.body,
    dir,
    files,
    path: nodePath.join(dir, "SKILL.md"),
    ...(front["allowed-tools"] === undefined ? {} : { allowedTools: FrontMatter.names(front["allowed-tools"]) })
  })
}

/** The skill directories' parents, in the order they apply: the user's, then a trusted workspace's. */
export const directories = (workspace: string, trusted: boolean, env: NodeJS.ProcessEnv = process.env) =>
  MarkdownFiles.directories("skills", workspace, trusted, env)

/** The files under a skill's directory, relative to it, `SKILL.md` left out (bounded). */
const bundled = (fs: FileSystem.FileSystem, dir: string) =>
  Effect.map(
    Effect.orElseSucceed(fs.readDirectory(dir, { recursive: true }), () => []),
    (names) => names.filter((name) => name !== "SKILL.md" && !name.split(nodePath.sep).some((part) => part.startsWith("."))).sort().slice(0, MAX_LISTED_FILES)
  )

/** Skills found in `roots` (each a directory of skill directories), later ones winning, and the skills skipped. */
export const discoverIn = (roots: ReadonlyArray<MarkdownFiles.Directory>) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const found = new Map<string, Skill>()
    const problems: Array<SkillProblem> = []
    for (const { dir: root, ownedByUser, within } of roots) {
      const entries = yield* Effect.orElseSucceed(fs.readDirectory(root), () => [])
      for (const entry of entries.filter((name) => !name.startsWith(".")).sort()) {
        const dir = nodePath.join(root, entry)
        const isDir = yield* Effect.orElseSucceed(Effect.map(fs.stat(dir), (info) => info.type === "Directory"), () => false)
        if (!isDir) continue
        const path = nodePath.join(dir, "SKILL.md")
        const read = yield* readConfined(path, { maxBytes: MAX_SKILL_FILE_BYTES, within, ownedByUser, warn: false })
        const problem = read._tag === "Missing"
          ? "no SKILL.md in it"
          : read._tag === "NotRegular"
          ? "SKILL.md is not a regular file"
          : read._tag === "Skipped"
          ? read.reason
          : read._tag === "Failed"
          ? read.message
          : read.truncated
          ? `SKILL.md is larger than ${MAX_SKILL_FILE_BYTES} bytes`
          : undefined
        if (problem !== undefined) {
          problems.push({ path: dir, message: problem })
          continue
        }
        const parsed = parse(dir, textOf(read) ?? "", yield* bundled(fs, dir))
        if (Result.isFailure(parsed)) problems.push({ path, message: parsed.failure })
        else found.set(parsed.success.name, parsed.success)
      }
    }
    return { skills: [...found.values()], problems }
  })

/** The skills of a run in `workspace`, and the skills skipped. */
export const discover = (workspace: string, trusted: boolean, env: NodeJS.ProcessEnv = process.env) =>
  Effect.flatMap(
    Plugins.directories("skills", workspace, trusted, env),
    // the plugins' first, so that the user's own skills and the workspace's win over them
    (plugins) => discoverIn([...plugins, ...directories(workspace, trusted, env)])
  )
