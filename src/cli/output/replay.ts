/**
 * Where you were: the last turns of a session, drawn before the prompt when `chat` takes a session
 * up again (`--continue`, `--resume`, `/resume`). Each turn as it looked: the user's message after
 * `> `, the answers (rendered as Markdown where the live answers are, `markdown.ts`), and one line
 * per tool call with its outcome. Read from the session's view, so a rewound branch or what a
 * compaction dropped is not shown (a summary is named as such).
 */
import * as Effect from "effect/Effect"
import type * as Message from "../../domain/Message.ts"
import * as SessionLog from "../../domain/SessionLog.ts"
import * as Format from "../terminal/format.ts"
import { clean } from "../terminal/safeText.ts"
import type { ScreenShape } from "../terminal/screen.ts"
import { makeMarkdown } from "./markdown.ts"
import { markdownStyle } from "./markdownInline.ts"
import { causeLine } from "./toolPreview.ts"

/** How many turns are shown by default. */
export const REPLAY_TURNS = 3

/** Lines of a user message shown at most (a pasted block is folded). */
const USER_LINES = 6

/** What a prompt put in for the model (`@path` files, `!cmd` outputs): named, not shown again. */
const ATTACHED = /\n*<(file|user-shell-command)(?: path="([^"]*)")?[^>]*>\n(?:\$ ([^\n]*)\n)?[\s\S]*?<\/\1>\n*/g

/** A user message as the user typed it: what the chat attached is named on a line (`[@notes.txt]`, `[!git status]`). */
export const typed = (content: Message.Content): string =>
  (typeof content === "string" ? content : content.map((part) => part.type === "text" ? part.text : "[image]").join("\n"))
    .replace(ATTACHED, (_, kind: string, path: string | undefined, command: string | undefined) =>
      kind === "file" ? `\n[@${path ?? "file"}]\n` : `\n[!${command ?? ""}]\n`)
    .replace(/\n{2,}/g, "\n")
    .trim()

/** A user message's own text, what the chat attached left out: what the prompt offers again after `/rewind`. */
export const ownText = (content: Message.Content): string =>
  (typeof content === "string" ? content : content.map((part) => part.type === "text" ? part.text : "").join("\n")).replace(ATTACHED, "\n").trim()

/** The view's messages from the start of its `turns`-th last turn (a row of user messages opens one), and how many turns it holds. */
export const lastTurns = (messages: ReadonlyArray<Message.Message>, turns: number) => {
  const starts: Array<number> = []
  messages.forEach((message, i) => {
    if (message.role === "user" && messages[i - 1]?.role !== "user") starts.push(i)
  })
  const from = starts.length <= turns ? (starts[0] ?? messages.length) : starts[starts.length - turns]!
  return { messages: messages.slice(from), shown: Math.min(turns, starts.length), total: starts.length }
}

/** Draws the last `turns` turns of the session `entries` on `screen`; nothing for a session without any. */
export const replay = (screen: ScreenShape, entries: ReadonlyArray<SessionLog.SessionEntry>, turns = REPLAY_TURNS) =>
  Effect.gen(function*() {
    const { err } = screen
    const last = lastTurns(SessionLog.view(entries), turns)
    if (last.total === 0) return
    const earlier = last.total - last.shown
    yield* screen.line(err.dim(`── where you were: the last ${Format.plural(last.shown, "turn")}${earlier > 0 ? ` (${earlier} before them)` : ""} ──`))
    const results = new Map<string, Message.ToolResultMessage>()
    for (const message of last.messages) if (message.role === "tool") results.set(message.toolCallId, message)
    for (const message of last.messages) {
      switch (message.role) {
        case "system":
          if (message.content.startsWith(SessionLog.SUMMARY_PREFIX)) yield* screen.line(err.dim("(a summary of the conversation before)"))
          break
        case "user": {
          const lines = typed(message.content).split("\n")
          const shown = lines.slice(0, USER_LINES).map((line, i) => `${i === 0 ? err.bold("> ") : "  "}${clean(line)}`)
          if (lines.length > USER_LINES) shown.push(err.dim(`  … ${lines.length - USER_LINES} more lines`))
          for (const line of shown) yield* screen.line(line)
          break
        }
        case "assistant": {
          if (message.content.trim() !== "") {
            const text = `${message.content.trimEnd()}\n`
            if (screen.markdown) {
              const markdown = makeMarkdown(markdownStyle(screen.out), screen.size)
              yield* screen.styled(markdown.push(text) + markdown.end())
            } else yield* screen.text(text)
          }
          for (const call of message.toolCalls ?? []) {
            const result = results.get(call.id)
            const mark = result === undefined ? err.dim("·") : result.isError === true ? err.red("✗") : err.green("✓")
            const cause = result?.isError === true ? causeLine(typed(result.content)) : undefined
            yield* screen.line(
              `${err.cyan("⚙")} ${err.bold(Format.truncate(call.name, 80))} ${err.dim(Format.args(call.arguments))} ${mark}` +
                (cause === undefined ? "" : ` ${err.dim(Format.truncate(cause, 120))}`)
            )
          }
          break
        }
        case "tool":
          break
      }
    }
    yield* screen.line(err.dim("──"))
  })
