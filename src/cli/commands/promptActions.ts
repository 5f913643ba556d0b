/**
 * What the chat does with a `!cmd` or `# note` typed at its prompt, and with the `@path` files a
 * message mentions (`input/promptSyntax.ts` reads the line).
 *
 * `!cmd` runs through the loop's `exec` tool, so in the sandbox when there is one, under the
 * permission rules: a deny rule refuses it, an ask rule asks (y/N); otherwise typing it is the
 * approval, as in Claude Code's bash mode. What it printed is shown (its last lines) and kept
 * whole, as exec gives it, for the next message: the model sees the command and its output.
 *
 * `# note` appends `- note` to the workspace's memory file: AGENTS.md or CLAUDE.md, whichever
 * exists; when both or neither do, the chat asks which, once.
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import { toOutput } from "../../domain/Tool.ts"
import { CurrentTurn } from "../../services/CurrentTurn.ts"
import type { ToolRegistryShape } from "../../services/ToolRegistry.ts"
import { type Mention, mentions } from "../input/promptSyntax.ts"
import type * as Permissions from "../permissions/state.ts"
import * as Format from "../terminal/format.ts"
import { clean } from "../terminal/safeText.ts"
import type { ScreenShape } from "../terminal/screen.ts"
import { noTurn } from "./commandPrompt.ts"

/** Lines of a `!cmd`'s output shown under it (all of it goes to the model). */
export const SHOWN_LINES = 10

/** What running a typed command needs. */
export interface ShellContext {
  readonly registry: ToolRegistryShape
  readonly permissions: Permissions.Permissions
  readonly screen: ScreenShape
  /** Reads one answer; `undefined` without a terminal. */
  readonly ask: Effect.Effect<string | undefined> | undefined
  readonly sessionKey: string
}

/** The block the next message carries for a command the user ran. */
export const shellBlock = (command: string, output: string): string =>
  `<user-shell-command>\n$ ${command}\n${output.replace(/\n$/, "")}\n</user-shell-command>`

/** Runs `command` as typed after `!`: the block for the next message, or `undefined` when it did not run (the user told why). */
export const runShell = (command: string, context: ShellContext) =>
  Effect.gen(function*() {
    const { screen } = context
    const err = screen.err
    const verdict = context.permissions.evaluate({ name: "exec", arguments: { command } })
    if (verdict._tag === "Deny") {
      yield* screen.line(err.red(`✗ !${Format.truncate(command, 80)} is denied by the permission rule ${verdict.rule.text}`))
      return undefined
    }
    if (verdict._tag === "Ask") {
      if (context.ask === undefined) {
        yield* screen.line(err.red(`✗ the permission rule ${verdict.rule.text} asks about !${Format.truncate(command, 80)}, and there is no terminal to ask`))
        return undefined
      }
      yield* screen.prompt(`${err.yellow("?")} the rule ${verdict.rule.text} asks: run ${err.bold(Format.truncate(command, 80))}? [y/N] `)
      const answer = ((yield* context.ask) ?? "").trim().toLowerCase()
      if (answer !== "y" && answer !== "yes") {
        yield* screen.line(err.dim("(not run)"))
        return undefined
      }
    }
    const exec = yield* context.registry.get("exec")
    if (Option.isNone(exec)) {
      yield* screen.line(err.red("✗ !cmd needs the exec tool, which is not enabled (--tools)"))
      return undefined
    }
    yield* screen.line(`${err.cyan("$")} ${err.bold(clean(command))}`)
    const ran = yield* exec.value.execute({ command }, { toolCallId: "shell", turnId: "", sessionKey: context.sessionKey, iteration: 0, depth: 0 }).pipe(
      Effect.provideService(CurrentTurn, noTurn),
      Effect.result
    )
    if (ran._tag === "Failure") {
      yield* screen.line(err.red(`✗ ${clean(ran.failure.message)}`))
      return shellBlock(command, ran.failure.message)
    }
    const content = toOutput(ran.success).content
    // the output as the command printed it; a failure keeps exec's line saying so
    const output = (typeof content === "string" ? content : content.map((part) => part.type === "text" ? part.text : "").join("")).replace(/^exit code: 0\n/, "")
    const lines = output.replace(/\n$/, "").split("\n")
    if (lines.length > SHOWN_LINES) yield* screen.line(err.dim(`  … ${lines.length - SHOWN_LINES} lines above`))
    for (const line of lines.slice(-SHOWN_LINES)) yield* screen.line(err.dim(`  ${clean(line)}`))
    yield* screen.line(err.dim("(the command and its output go with your next message)"))
    return shellBlock(command, output)
  })

/** The memory files a note may go to, in the order offered. */
export const MEMORY_FILES = ["AGENTS.md", "CLAUDE.md"] as const

/**
 * The memory file of `workspace` a note goes to: the one that exists, or the one the user picks
 * when both or neither do (`undefined` when they pick none).
 */
export const memoryFile = (workspace: string, screen: ScreenShape, ask: Effect.Effect<string | undefined>) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const existing: Array<string> = []
    for (const name of MEMORY_FILES) if (yield* Effect.orElseSucceed(fs.exists(nodePath.join(workspace, name)), () => false)) existing.push(name)
    if (existing.length === 1) return nodePath.join(workspace, existing[0]!)
    const why = existing.length === 0 ? "there is no memory file here yet" : "both memory files are here"
    yield* screen.line(screen.err.dim(`(${why}: notes go to the one you choose, for this chat)`))
    yield* screen.prompt(`${screen.err.yellow("?")} save notes to 1) AGENTS.md or 2) CLAUDE.md? [1/2] `)
    const answer = ((yield* ask) ?? "").trim().toLowerCase()
    const chosen = answer === "1" || answer === "agents.md" ? "AGENTS.md" : answer === "2" || answer === "claude.md" ? "CLAUDE.md" : undefined
    return chosen === undefined ? undefined : nodePath.join(workspace, chosen)
  })

/** Appends `- note` to `file` (created if missing), on a line of its own. */
export const appendNote = (file: string, note: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const before = yield* Effect.orElseSucceed(fs.readFileString(file), () => "")
    const separator = before === "" || before.endsWith("\n") ? "" : "\n"
    yield* fs.writeFileString(file, `${separator}- ${note}\n`, { flag: "a" })
  })

/** What reading mentions needs. */
export interface MentionContext {
  readonly workspace: string
  readonly permissions: Permissions.Permissions
  readonly registry: ToolRegistryShape
  readonly sessionKey: string
}

/** The text `read_file` gives for `mention`; fails with one line saying why it cannot be read. */
const readMention = (mention: Mention, context: MentionContext) =>
  Effect.gen(function*() {
    const tool = yield* context.registry.get("read_file")
    if (Option.isNone(tool)) return yield* Effect.fail(`@${mention.written}: the read_file tool is not enabled (--tools)`)
    const verdict = context.permissions.evaluate({ name: "read_file", arguments: { path: mention.path } })
    if (verdict._tag === "Deny" || verdict._tag === "Ask") {
      return yield* Effect.fail(`@${mention.written} is ${verdict._tag === "Deny" ? "denied" : "asked about"} by the permission rule ${verdict.rule.text}`)
    }
    if (mention.from !== undefined && (mention.from < 1 || mention.to! < mention.from)) {
      return yield* Effect.fail(`@${mention.written}: a line range is FROM-TO, from line 1`)
    }
    const args = {
      path: mention.path,
      ...(mention.from === undefined ? {} : { offset: mention.from, limit: mention.to! - mention.from + 1 })
    }
    const result = yield* tool.value.execute(args, { toolCallId: "mention", turnId: "", sessionKey: context.sessionKey, iteration: 0, depth: 0 }).pipe(
      Effect.provideService(CurrentTurn, noTurn),
      Effect.mapError((error) => `@${mention.written}: ${error.message}`)
    )
    const content = toOutput(result).content
    return typeof content === "string" ? content : content.map((part) => part.type === "text" ? part.text : "").join("")
  })

/**
 * `text` with the files it mentions after it, each as `<file path="…">` (read_file's numbered
 * lines, `lines="10-40"` for a range); fails with one line when a mentioned file may not be read.
 * A mention of no existing file stays as it is.
 */
export const withMentionedFiles = (text: string, context: MentionContext) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const blocks: Array<string> = []
    for (const mention of mentions(text)) {
      const absolute = nodePath.resolve(context.workspace, mention.path)
      const info = yield* Effect.option(fs.stat(absolute))
      if (Option.isNone(info) || info.value.type !== "File") continue
      const lines = mention.from === undefined ? "" : ` lines="${mention.from}-${mention.to}"`
      const shown = mention.path.replaceAll("\"", "&quot;")
      blocks.push(`<file path="${shown}"${lines}>\n${(yield* readMention(mention, context)).replace(/\n$/, "")}\n</file>`)
    }
    return blocks.length === 0 ? text : `${text}\n\n${blocks.join("\n\n")}`
  })
