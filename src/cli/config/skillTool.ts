/**
 * The `skill` tool: Agent Skills (the agentskills.io format Claude Code reads) by progressive disclosure.
 * The tool's description lists each skill's name and description, as Claude Code's `Skill` tool
 * does; a call `{ "skill": NAME }` returns the skill's instructions (its `SKILL.md` body) with the
 * files bundled beside it, and `{ "skill": NAME, "file": "scripts/run.py" }` one of those files,
 * read confined to the skill's directory (links resolved) whether or not it lies in the workspace.
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { ToolError } from "../../domain/errors.ts"
import * as Tool from "../../domain/Tool.ts"
import { readConfined, textOf } from "../../layers/internal/readConfined.ts"

/** A skill the tool offers. */
export interface SkillDefinition {
  readonly name: string
  /** What it does and when to use it: shown to the model in the tool's description. */
  readonly description: string
  /** Its instructions: the body of its `SKILL.md`. */
  readonly body: string
  /** Its directory, absolute: what `file` reads from. */
  readonly dir: string
  /** The files bundled with it, relative to `dir` (`SKILL.md` left out). */
  readonly files: ReadonlyArray<string>
}

/** The largest bundled file returned. */
export const MAX_SKILL_FILE_BYTES = 256 * 1024

/** Arguments of `skill`. */
export const SkillParameters = Schema.Struct({
  skill: Schema.String.annotate({ description: "The name of one of the skills listed in this tool's description" }),
  file: Schema.optionalKey(Schema.String.annotate({ description: "A file bundled with the skill, relative to its directory (as its instructions name it)" }))
})

/** Options of `skillTool`. */
export interface SkillToolOptions {
  /** Runs when a skill's instructions are loaded (the CLI applies its `allowed-tools` then). */
  readonly onLoad?: (name: string) => Effect.Effect<void>
}

/** The `skill` tool over `skills`; a name not among them is an error listing those that are. */
export const skillTool = (skills: ReadonlyArray<SkillDefinition>, options: SkillToolOptions = {}) => {
  const byName = new Map(skills.map((skill) => [skill.name, skill]))
  const listed = skills.map((skill) => `- ${skill.name}: ${skill.description}`).join("\n")
  return Tool.make({
    name: "skill",
    description: "Load a skill: instructions and files for a kind of task. When a task matches one of these skills, " +
      `load it with \`skill\` first and follow its instructions; read a file it names with \`file\`:\n${listed}`,
    parameters: SkillParameters,
    readOnly: true,
    execute: ({ file, skill: name }) =>
      Effect.gen(function*() {
        const skill = byName.get(name)
        if (skill === undefined) {
          return yield* new ToolError({ message: `No skill named "${name}"; the skills are: ${[...byName.keys()].join(", ")}` })
        }
        if (file === undefined) {
          if (options.onLoad !== undefined) yield* options.onLoad(name)
          const bundled = skill.files.length === 0 ? "" : `\n\nFiles bundled with this skill (read one with file):\n${skill.files.map((f) => `- ${f}`).join("\n")}`
          return `Base directory for this skill: ${skill.dir}\n\n${skill.body}${bundled}`
        }
        const path = nodePath.resolve(skill.dir, file)
        const read = yield* readConfined(path, { maxBytes: MAX_SKILL_FILE_BYTES, within: skill.dir, warn: false })
        switch (read._tag) {
          case "Read":
            return read.truncated
              ? yield* new ToolError({ message: `${file} is larger than ${MAX_SKILL_FILE_BYTES} bytes` })
              : textOf(read) ?? ""
          case "Missing":
            return yield* new ToolError({ message: `${file}: no such file in skill ${name}` })
          case "NotRegular":
            return yield* new ToolError({ message: `${file}: not a regular file` })
          case "Skipped":
            return yield* new ToolError({ message: `${file}: ${read.reason}` })
          case "Failed":
            return yield* new ToolError({ message: `${file}: ${read.message}` })
        }
      })
  })
}
