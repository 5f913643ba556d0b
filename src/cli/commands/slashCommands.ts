/**
 * The chat's slash commands: the built-in table, and what a typed line asks for (a built-in, a
 * custom command of `customCommands.ts`, an unknown command, or text for the model). Kept apart
 * from `chat.ts`, which does what the line asks.
 */
import type { Usage } from "../../domain/Usage.ts"
import { describeState, type JobInfo } from "../../tools/backgroundJobs.ts"
import * as CustomCommands from "../config/customCommands.ts"
import * as Format from "../terminal/format.ts"

/** A built-in command: its name, how it is typed and what it does. */
export interface Builtin {
  readonly name: string
  readonly usage: string
  readonly help: string
}

/** The built-in commands, in the order `/help` lists them. */
export const builtins: ReadonlyArray<Builtin> = [
  { name: "followup", usage: "/followup TEXT", help: "run TEXT as a new turn after the current one" },
  { name: "model", usage: "/model [NAME]", help: "use model NAME for the next turns (without NAME: say which)" },
  { name: "plan", usage: "/plan [TEXT]", help: "plan mode: the model only reads, then asks you to accept its plan (Shift-Tab cycles the modes); TEXT starts a turn" },
  { name: "cost", usage: "/cost", help: "tokens and cost of this chat's turns so far" },
  { name: "tools", usage: "/tools", help: "the tools offered to the model" },
  { name: "undo", usage: "/undo", help: "put back the files the last turn changed (as agent-loop undo)" },
  { name: "compact", usage: "/compact", help: "summarise the conversation now: the next turns start from the summary (the log keeps it all)" },
  { name: "clear", usage: "/clear", help: "start a new session (the current one stays saved)" },
  { name: "sessions", usage: "/sessions", help: "this workspace's saved sessions (as agent-loop sessions list)" },
  { name: "resume", usage: "/resume [KEY]", help: "continue session KEY (without KEY: pick one)" },
  { name: "rewind", usage: "/rewind [N]", help: "go back to before one of your messages, conversation and files (Esc Esc; N: the N-th last)" },
  { name: "jobs", usage: "/jobs", help: "the background commands of this session (exec with background: true)" },
  { name: "stop", usage: "/stop", help: "abort the running turn (nothing of it is saved)" },
  { name: "help", usage: "/help", help: "this list, custom commands too" },
  { name: "exit", usage: "/exit", help: "quit (also /quit, Ctrl-D)" }
]

const ALIASES: Record<string, string> = { quit: "exit" }

/** What a typed line asks for. */
export type Parsed =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "Builtin"; readonly name: string; readonly args: string }
  /** `prompt`: the body with the arguments substituted; its `!` and `@` pieces are `commandPrompt.ts`'s. */
  | { readonly _tag: "Custom"; readonly command: CustomCommands.CustomCommand; readonly args: string; readonly prompt: string }
  | { readonly _tag: "Unknown"; readonly name: string }

/**
 * Reads a trimmed, non-empty line. A built-in wins over a custom command of the same name; a line
 * whose first word has another `/` in it (`/etc/hosts: what is this?`) is text.
 */
export const parse = (text: string, customs: ReadonlyArray<CustomCommands.CustomCommand>): Parsed => {
  const called = CustomCommands.invocation(text)
  if (called === undefined || called.name.includes("/")) return { _tag: "Text", text }
  const name = ALIASES[called.name] ?? called.name
  if (builtins.some((b) => b.name === name)) return { _tag: "Builtin", name, args: called.args.trim() }
  const command = CustomCommands.find(customs, called.name)
  if (command !== undefined) return { _tag: "Custom", command, args: called.args, prompt: CustomCommands.expand(command.body, called.args) }
  return { _tag: "Unknown", name: called.name }
}

/** The lines of `/help`: the built-ins, Esc and Ctrl-C, then the custom commands with their hints. */
export const helpLines = (customs: ReadonlyArray<CustomCommands.CustomCommand>): ReadonlyArray<string> => {
  const rows: Array<[string, string]> = [
    ...builtins.map((b): [string, string] => [b.usage, b.help]),
    ["Esc", "stop now: the model call and tools are cancelled, what was done is kept"],
    ["Ctrl-C", "interrupt: the model sums up; twice within 2 s aborts"],
    ...customs.map((c): [string, string] => [
      `/${c.name}${c.argumentHint === undefined ? "" : ` ${c.argumentHint}`}`,
      `${c.description ?? "(custom command)"}  [${c.path}]`
    ])
  ]
  const width = Math.max(...rows.map(([usage]) => usage.length)) + 2
  return rows.map(([usage, help]) => `${usage.padEnd(width)}${help}`)
}

/** The `/cost` line: the tokens of the chat's turns, and their cost when the model has a price. */
export const costLine = (usage: Usage, turns: number): string =>
  `${turns} turn${turns === 1 ? "" : "s"}: ${usage.inputTokens} input tokens` +
  `${usage.cachedInputTokens === undefined ? "" : ` (${usage.cachedInputTokens} cached)`}, ${usage.outputTokens} output tokens` +
  (usage.costUsd === undefined ? ", cost unknown (no price for the model)" : `, $${usage.costUsd.toFixed(4)}`)

/** The `/jobs` lines: id, state (running, or how it ended), age, and the command, one line each. */
export const jobLines = (jobs: ReadonlyArray<JobInfo>, now: number): ReadonlyArray<string> =>
  jobs.map((job) =>
    `${job.id.padEnd(7)} ${describeState(job.state).padEnd(20)} ${Format.duration(Math.max(0, now - job.startedAt)).padStart(8)} ago  ` +
    Format.truncate(job.command, 100)
  )
