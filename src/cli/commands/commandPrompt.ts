/**
 * A custom command's prompt at invocation, as Claude Code makes it: the arguments substituted
 * (`$ARGUMENTS`, `$1`…`$9`), then in one pass over that text each `` !`cmd` `` replaced by what
 * the command printed and each `@path` naming a file in the workspace by the file. Nothing put in
 * is read again, so a file or an output holding `` !`…` `` never runs.
 *
 * A `` !`cmd` `` runs through the loop's `exec` tool (in the sandbox when there is one) only once
 * approved without a question: an allow rule (the command's `allowed-tools`, e.g.
 * `Bash(git status:*)`, or the settings') or `--yes`; a deny rule refuses it. Otherwise the
 * command is not run and the line says which rule to add, as Claude Code refuses it. An `@path` is
 * read as `read_file` would: inside the workspace (links resolved), not denied or asked about by a
 * rule; a name that is no file in the workspace stays as text.
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { toOutput } from "../../domain/Tool.ts"
import { readConfined, textOf } from "../../layers/internal/readConfined.ts"
import { CurrentTurn } from "../../services/CurrentTurn.ts"
import { ToolRegistry } from "../../services/ToolRegistry.ts"
import * as CustomCommands from "../config/customCommands.ts"
import type * as Permissions from "../permissions/state.ts"

/** The largest file an `@path` puts into a prompt. */
export const MAX_MENTION_BYTES = 256 * 1024

/** What the prompt needs of the run's settings. */
export interface PromptSettings {
  readonly workspace: string
  readonly permissions: Permissions.Permissions
  readonly approval: "ask" | "approve" | "deny"
}

/** `` !`cmd` `` (group 1) or `@path` at the start or after a space (group 2). */
const PIECES = /!`([^`\n]+)`|(?<=^|\s)@([^\s`]+)/g

const outside = (root: string, path: string) => {
  const rel = nodePath.relative(root, path)
  return rel === ".." || rel.startsWith(`..${nodePath.sep}`) || nodePath.isAbsolute(rel)
}

/** The turn a `` !`cmd` `` (or a typed prompt's `!cmd` and `@path`) runs its tool outside of: `exec` reaches no sub-turns. */
export const noTurn = CurrentTurn.of({
  turnId: "",
  sessionKey: "",
  model: "",
  depth: 0,
  parentTurnId: undefined,
  spawnSubTurn: () => Effect.die("a command's ! line has no turn"),
  spawnDetached: () => Effect.die("a command's ! line has no turn")
})

/** Runs a `` !`cmd` `` line once the rules (with the command's `allowed-tools`) or `--yes` approve it. */
const runLine = (command: CustomCommands.CustomCommand, line: string, settings: PromptSettings, index: number) =>
  Effect.gen(function*() {
    const verdict = settings.permissions.evaluate({ name: "exec", arguments: { command: line } })
    if (verdict._tag === "Deny") return yield* Effect.fail(`!\`${line}\` is denied by ${verdict.rule.text} (${verdict.rule.source})`)
    const approved = verdict._tag === "Allow" || (verdict._tag === "None" && settings.approval === "approve")
    if (!approved) {
      const word = line.trim().split(/\s+/).slice(0, 2).join(" ")
      return yield* Effect.fail(
        `!\`${line}\` is not pre-approved: add Bash(${word}:*) to allowed-tools in ${command.path}, or pass --yes` +
          (verdict._tag === "Ask" ? ` (the rule ${verdict.rule.text} asks)` : "")
      )
    }
    const exec = yield* (yield* ToolRegistry).get("exec")
    if (Option.isNone(exec)) return yield* Effect.fail(`!\`${line}\` needs the exec tool, which is not enabled (--tools)`)
    const result = yield* exec.value.execute({ command: line }, {
      toolCallId: `command-${index}`,
      turnId: "",
      sessionKey: "",
      iteration: 0,
      depth: 0
    }).pipe(
      Effect.provideService(CurrentTurn, noTurn),
      Effect.mapError((error) => `!\`${line}\`: ${error.message}`)
    )
    const content = toOutput(result).content
    const text = typeof content === "string" ? content : content.map((part) => part.type === "text" ? part.text : "").join("")
    // the output as the command printed it; a failure keeps exec's line saying so
    return text.replace(/^exit code: 0\n/, "")
  })

/** The file an `@path` names, or `undefined` when it names none (it stays as text); fails when it may not be read. */
const mention = (name: string, settings: PromptSettings) =>
  Effect.gen(function*() {
    // a sentence's end is not part of the name
    const path = name.replace(/[.,;:!?)]+$/, "")
    const absolute = nodePath.resolve(settings.workspace, path)
    if (outside(settings.workspace, absolute)) return yield* Effect.fail(`@${path} is outside the workspace`)
    const rel = nodePath.relative(settings.workspace, absolute)
    const read = yield* readConfined(absolute, { maxBytes: MAX_MENTION_BYTES, within: settings.workspace, warn: false })
    if (read._tag === "Missing" || read._tag === "NotRegular") return undefined
    if (read._tag === "Skipped") return yield* Effect.fail(`@${path}: ${read.reason}`)
    if (read._tag === "Failed") return yield* Effect.fail(`@${path}: ${read.message}`)
    const ruled = settings.permissions.pathRule("read_file", rel)
    if (ruled !== undefined) return yield* Effect.fail(`@${path} is ${ruled._tag === "Deny" ? "denied" : "asked about"} by ${ruled.rule}`)
    if (read.truncated) return yield* Effect.fail(`@${path} is larger than ${MAX_MENTION_BYTES} bytes`)
    return { path: rel, text: textOf(read) ?? "", rest: name.slice(path.length) }
  })

/**
 * The prompt of `command` called with `args`: fails with one line (naming the piece and why) when
 * a `` !`cmd` `` is not approved or fails to start, or an `@path` may not be read.
 */
export const make = (command: CustomCommands.CustomCommand, args: string, settings: PromptSettings) =>
  Effect.gen(function*() {
    const text = CustomCommands.expand(command.body, args)
    const pieces = [...text.matchAll(PIECES)]
    if (pieces.length === 0) return text
    const out: Array<string> = []
    let at = 0
    let lines = 0
    for (const piece of pieces) {
      out.push(text.slice(at, piece.index))
      at = piece.index + piece[0].length
      if (piece[1] !== undefined) {
        out.push((yield* runLine(command, piece[1], settings, lines++)).trimEnd())
        continue
      }
      const file = yield* mention(piece[2]!, settings)
      out.push(file === undefined ? piece[0] : `@${file.path}${file.rest}\n<file path="${file.path}">\n${file.text.replace(/\r?\n$/, "")}\n</file>\n`)
    }
    out.push(text.slice(at))
    return out.join("")
  }).pipe(
    settings.permissions.withAllowed(command.allowedTools ?? [], allowedSource(command)),
    Effect.mapError((message) => `/${command.name}: ${message}`)
  )

/** Where a command's pre-approvals come from, as a rule's source names it. */
export const allowedSource = (command: CustomCommands.CustomCommand) => `allowed-tools of ${command.path}`

/** Runs a turn of `command` with its `allowed-tools` pre-approved, as Claude Code does. */
export const withAllowed = (command: CustomCommands.CustomCommand | undefined, permissions: Permissions.Permissions) =>
<A, E, R>(turn: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  command?.allowedTools === undefined ? turn : permissions.withAllowed(command.allowedTools, allowedSource(command))(turn)
