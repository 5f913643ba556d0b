/**
 * The `hooks` setting in Claude Code's shape: for each event, matcher groups, each with the
 * commands to run.
 *
 * @example
 * ```json
 * { "hooks": { "PreToolUse": [{ "matcher": "Bash", "hooks": [{ "type": "command", "command": "./check.sh", "timeout": 10 }] }] } }
 * ```
 */
import * as Schema from "effect/Schema"

/** The events agent-loop runs, and the hook point each maps onto. */
export const EVENTS = {
  PreToolUse: "beforeTool",
  PostToolUse: "afterTool",
  UserPromptSubmit: "beforeTurn",
  Stop: "beforeStop",
  SubagentStop: "beforeStop",
  SessionStart: "sessionStart",
  SessionEnd: "sessionEnd",
  PreCompact: "beforeCompact",
  Notification: "approveTool"
} as const

/** An event agent-loop runs. */
export type EventName = keyof typeof EVENTS

/** One command of a matcher group; `type` other than `"command"` is skipped with a warning. */
export const HookCommand = Schema.Struct({
  type: Schema.String,
  command: Schema.optionalKey(Schema.String),
  /** Seconds; default 60. */
  timeout: Schema.optionalKey(Schema.Finite.check(Schema.isGreaterThan(0)))
})
export type HookCommand = typeof HookCommand.Type

/** A matcher and its commands. */
export const MatcherGroup = Schema.Struct({
  matcher: Schema.optionalKey(Schema.String),
  hooks: Schema.Array(HookCommand)
})
export type MatcherGroup = typeof MatcherGroup.Type

/** The `hooks` value: event name to matcher groups. Unknown event names are skipped with a warning. */
export const HooksConfig = Schema.Record(Schema.String, Schema.Array(MatcherGroup))
export type HooksConfig = typeof HooksConfig.Type

/** Hooks as one settings file gave them. */
export interface HooksSource {
  /** The settings file, shown by `hooks list` and in warnings. */
  readonly source: string
  readonly hooks: HooksConfig
}

/** Default command timeout, as in Claude Code. */
export const DEFAULT_TIMEOUT_SECONDS = 60

/** A runnable command. */
export interface Command {
  readonly command: string
  readonly timeoutMs: number
}

/** A matcher group ready to run: which names it matches, and its commands. */
export interface Group {
  readonly event: EventName
  readonly source: string
  readonly index: number
  readonly matcher: string | undefined
  readonly test: (names: ReadonlyArray<string>) => boolean
  readonly commands: ReadonlyArray<Command>
}

/**
 * How a matcher selects: absent, empty or `*` matches everything; otherwise it is a regular
 * expression that must match a whole name (`Edit|Write`, `mcp__github__.*`). It runs only on tool
 * names and event sources, never on text from the model.
 */
const compileMatcher = (matcher: string | undefined): ((names: ReadonlyArray<string>) => boolean) | string => {
  if (matcher === undefined || matcher === "" || matcher === "*") return () => true
  try {
    const regex = new RegExp(`^(?:${matcher})$`)
    return (names) => names.some((name) => regex.test(name))
  } catch (error) {
    return `matcher ${JSON.stringify(matcher)} is not a valid regular expression: ${error instanceof Error ? error.message : String(error)}`
  }
}

/** The groups of `sources`, in order, and a warning for each part skipped. */
export const compile = (sources: ReadonlyArray<HooksSource>): { readonly groups: ReadonlyArray<Group>; readonly warnings: ReadonlyArray<string> } => {
  const groups: Array<Group> = []
  const warnings: Array<string> = []
  for (const { hooks, source } of sources) {
    for (const [event, list] of Object.entries(hooks)) {
      if (!(event in EVENTS)) {
        warnings.push(`${source}: hooks.${event}: agent-loop has no such event; skipped`)
        continue
      }
      list.forEach((group, index) => {
        const test = compileMatcher(group.matcher)
        if (typeof test === "string") return warnings.push(`${source}: hooks.${event}[${index}]: ${test}; skipped`)
        const commands: Array<Command> = []
        group.hooks.forEach((hook, k) => {
          if (hook.type !== "command" || hook.command === undefined || hook.command.trim() === "") {
            warnings.push(`${source}: hooks.${event}[${index}].hooks[${k}]: only {"type": "command", "command": ...} hooks run; skipped`)
            return
          }
          commands.push({ command: hook.command, timeoutMs: Math.ceil((hook.timeout ?? DEFAULT_TIMEOUT_SECONDS) * 1000) })
        })
        if (commands.length > 0) groups.push({ event: event as EventName, source, index, matcher: group.matcher, test, commands })
      })
    }
  }
  return { groups, warnings }
}
