/**
 * The front matter of Markdown definition files (commands, agents, skills) read as Claude Code
 * reads it: YAML, except that the free-text keys (`description`, `argument-hint`) take the rest of
 * their line as written. So `argument-hint: [file] [focus]` (not YAML), `argument-hint: [file]`
 * (a YAML list) and `description: Review: the file` are text, as in Claude Code's own examples.
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as Yaml from "effect/encoding/Yaml"

/** The block: `---`, YAML, `---`; what follows it is the body. */
const BLOCK = /^\uFEFF?---[ \t]*\r?\n(?:([\s\S]*?)\r?\n)?---[ \t]*(?:\r?\n|$)/

/** Keys whose value is the rest of the line as written (unless quoted, or a `|`/`>` block). */
export const TEXT_KEYS: ReadonlyArray<string> = ["description", "argument-hint", "when_to_use"]

/** A file's front matter (`undefined` when it has none) and its body, trimmed. */
export interface Parts {
  readonly data: unknown
  readonly body: string
}

const asText = (line: string): string => {
  const match = /^([A-Za-z_][A-Za-z0-9_-]*):[ \t]+(\S.*?)[ \t]*$/.exec(line)
  if (match === null || !TEXT_KEYS.includes(match[1]!)) return line
  const value = match[2]!
  // quoted, a block scalar, an anchor or alias: YAML reads it
  if (/^["'|>&*]/.test(value)) return line
  return `${match[1]}: ${JSON.stringify(value)}`
}

/** Splits `text` into its front matter, read as YAML with `TEXT_KEYS` as text, and its body; fails saying why. */
export const split = (text: string): Result.Result<Parts, string> => {
  const block = BLOCK.exec(text)
  if (block === null) return Result.succeed({ data: undefined, body: text.trim() })
  const yaml = (block[1] ?? "").split(/\r?\n/).map(asText).join("\n")
  let data: unknown
  try {
    data = Yaml.parse(yaml) ?? {}
  } catch (error) {
    return Result.fail(`invalid YAML: ${(error instanceof Error ? error.message : String(error)).split("\n")[0]}`)
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) return Result.fail("the front matter is not a set of `key: value` lines")
  return Result.succeed({ data, body: text.slice(block[0].length).trim() })
}

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/** Decodes front matter `data` with `schema`, every issue in one line. */
export const decode = <S extends Schema.Top & { readonly DecodingServices: never }>(schema: S, data: unknown): Result.Result<S["Type"], string> => {
  const decoded = Schema.decodeUnknownResult(schema)(data ?? {}, { errors: "all" })
  if (Result.isSuccess(decoded)) return Result.succeed(decoded.success)
  return Result.fail(formatIssues(decoded.failure.issue).issues.map((issue) =>
    `${issue.path !== undefined && issue.path.length > 0 ? issue.path.map(String).join(".") : "front matter"}: ${issue.message}`
  ).join("; "))
}

/** A list of names as Claude Code writes one: a YAML list, or a string separated by commas (or spaces, between rules). */
export const names = (value: string | ReadonlyArray<string>): ReadonlyArray<string> => {
  if (typeof value !== "string") return [...new Set(value.map((name) => name.trim()).filter((name) => name !== ""))]
  // commas and spaces outside parentheses separate: `Bash(git add:*), Bash(git status:*) Read`
  const out: Array<string> = []
  let depth = 0
  let current = ""
  for (const char of value) {
    if (char === "(") depth++
    if (char === ")") depth = Math.max(0, depth - 1)
    if (depth === 0 && (char === "," || /\s/.test(char))) {
      if (current.trim() !== "") out.push(current.trim())
      current = ""
    } else current += char
  }
  if (current.trim() !== "") out.push(current.trim())
  return [...new Set(out)]
}
