/**
 * The `hooks` setting in Claude Code's shape: for each event, matcher groups, each with the
 * commands to run (or URLs to POST the event to).
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
  PermissionRequest: "approveTool",
  PostToolUse: "afterTool",
  PostToolUseFailure: "onToolFailure",
  UserPromptSubmit: "beforeTurn",
  Stop: "beforeStop",
  SubagentStart: "beforeSubTurn",
  SubagentStop: "beforeStop",
  SessionStart: "sessionStart",
  SessionEnd: "sessionEnd",
  PreCompact: "beforeCompact",
  PostCompact: "afterCompact",
  Notification: "approveTool"
} as const

/** An event agent-loop runs. */
export type EventName = keyof typeof EVENTS

/**
 * One hook of a matcher group: `{"type": "command", "command": ...}` runs a shell command,
 * `{"type": "http", "url": ...}` POSTs the event to a URL; another type is skipped with a warning.
 */
export const HookCommand = Schema.Struct({
  type: Schema.String,
  command: Schema.optionalKey(Schema.String),
  url: Schema.optionalKey(Schema.String),
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
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

/** A runnable hook: a shell command, or an HTTP endpoint the event is POSTed to. */
export type Command =
  | { readonly _tag: "Command"; readonly command: string; readonly timeoutMs: number }
  | { readonly _tag: "Http"; readonly url: string; readonly headers: Readonly<Record<string, string>>; readonly timeoutMs: number }

/** How a hook is named in warnings and errors: its command or its URL. */
export const commandText = (command: Command): string => (command._tag === "Command" ? command.command : `POST ${command.url}`)

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
          const timeoutMs = Math.ceil((hook.timeout ?? DEFAULT_TIMEOUT_SECONDS) * 1000)
          if (hook.type === "command" && hook.command !== undefined && hook.command.trim() !== "") {
            commands.push({ _tag: "Command", command: hook.command, timeoutMs })
          } else if (hook.type === "http" && hook.url !== undefined && /^https?:\/\//i.test(hook.url)) {
            commands.push({ _tag: "Http", url: hook.url, headers: hook.headers ?? {}, timeoutMs })
          } else {
            warnings.push(
              `${source}: hooks.${event}[${index}].hooks[${k}]: only {"type": "command", "command": ...} and {"type": "http", "url": "http(s)://..."} hooks run; skipped`
            )
          }
        })
        if (commands.length > 0) groups.push({ event: event as EventName, source, index, matcher: group.matcher, test, commands })
      })
    }
  }
  return { groups, warnings }
}
