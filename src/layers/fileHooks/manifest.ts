/**
 * `HOOK.md` front matter of the Agent Hooks format: parsing and validation.
 *
 * Only the YAML front matter is read; a bad file becomes a list of problems, each naming the
 * file and the field, so that one broken hook never stops start-up.
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as Yaml from "effect/encoding/Yaml"

/** When a file hook runs, in the Agent Hooks vocabulary. */
export const Trigger = Schema.Literals([
  "pre-session",
  "post-session",
  "pre-agent-turn",
  "post-agent-turn",
  "pre-agent-turn-stop",
  "post-agent-turn-stop",
  "pre-tool-call",
  "post-tool-call",
  "post-tool-call-failure",
  "pre-subagent",
  "post-subagent",
  "pre-context-compact",
  "post-context-compact"
])
export type Trigger = typeof Trigger.Type

const withDefault = <S extends Schema.Top>(schema: S, value: S["Encoded"]) =>
  schema.pipe(Schema.withDecodingDefaultKey(Effect.succeed(value)))

const invalidRegex = (source: string): string | undefined => {
  try {
    new RegExp(source)
    return undefined
  } catch (error) {
    return `not a valid regular expression: ${error instanceof Error ? error.message : String(error)}`
  }
}

/** A regular expression, given as its source text. */
const RegexSource = Schema.String.check(Schema.makeFilter((source: string) => invalidRegex(source)))

/** The name of an environment variable, such as `GITHUB_TOKEN`. */
export const EnvName = Schema.String.check(Schema.isPattern(/^[A-Za-z_][A-Za-z0-9_]*$/, { message: "expected an environment variable name such as GITHUB_TOKEN" }))

/** The front matter of a `HOOK.md`, with the format's defaults. */
export const Manifest = Schema.Struct({
  name: Schema.NonEmptyString,
  description: Schema.String,
  trigger: Trigger,
  matcher: Schema.optionalKey(Schema.Struct({
    tool: Schema.optionalKey(RegexSource),
    pattern: Schema.optionalKey(RegexSource)
  })),
  timeout: withDefault(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)), 30_000),
  async: withDefault(Schema.Boolean, false),
  priority: withDefault(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1000 })), 100),
  /** Variables the script is given although they look like credentials (agent-loop's extension). */
  env: withDefault(Schema.Array(EnvName), [])
})
export type Manifest = typeof Manifest.Type

/** Why a hook was skipped: the file, the field at fault and what is wrong with it. */
export interface HookProblem {
  readonly path: string
  readonly field: string
  readonly message: string
}

const FRONT_MATTER = /^\uFEFF?---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/

/** The YAML text between the leading `---` lines, if the file starts with one. */
export const frontMatter = (text: string): string | undefined => FRONT_MATTER.exec(text)?.[1]

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/** Parses and validates the front matter of the `HOOK.md` at `path`. */
export const parse = (path: string, text: string): Result.Result<Manifest, ReadonlyArray<HookProblem>> => {
  const yaml = frontMatter(text)
  if (yaml === undefined) {
    return Result.fail([{ path, field: "front matter", message: "HOOK.md must start with a `---` YAML front matter block" }])
  }
  let data: unknown
  try {
    data = Yaml.parse(yaml)
  } catch (error) {
    return Result.fail([{ path, field: "front matter", message: `invalid YAML: ${error instanceof Error ? error.message : String(error)}` }])
  }
  const decoded = Schema.decodeUnknownResult(Manifest)(data ?? {}, { errors: "all" })
  if (Result.isSuccess(decoded)) return Result.succeed(decoded.success)
  return Result.fail(
    formatIssues(decoded.failure.issue).issues.map((issue) => ({
      path,
      field: issue.path !== undefined && issue.path.length > 0 ? issue.path.map(String).join(".") : "front matter",
      message: issue.message
    }))
  )
}
