/**
 * What a line typed at the chat's prompt can ask for besides text, as in Claude Code:
 *
 * - `!cmd`: run `cmd` now (`chat.ts` runs it through `exec`); its output goes with the next message.
 * - `# note`: a single line typed (not pasted) appends `note` to the memory file.
 * - `@path` and `@path:10-40` anywhere in a message: that file's text (those lines) goes with the
 *   message, read by the loop's own `read_file` tool, so with its rules: confined to the workspace
 *   (and added directories), at most its bytes, and the permission rules' `Read(…)` denials (a rule
 *   that asks refuses the mention: nobody is asked about a mention). A mention that names no file
 *   stays text (`@someone`); an image (`@shot.png`) is attached as an image (`images.ts`).
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import { toOutput } from "../../domain/Tool.ts"
import { trimEndWhile } from "../../domain/text.ts"
import { CurrentTurn } from "../../services/CurrentTurn.ts"
import type { ToolRegistryShape } from "../../services/ToolRegistry.ts"
import { noTurn } from "../commands/commandPrompt.ts"
import type * as Permissions from "../permissions/state.ts"

/** What a typed line asks for, when it is not plain text. */
export type Special =
  | { readonly _tag: "Shell"; readonly command: string }
  | { readonly _tag: "Memory"; readonly note: string }

/** `!cmd` (any typed or pasted input), or `# note` (one line typed, not pasted); `undefined` for text. */
export const special = (text: string, pasted: boolean): Special | undefined => {
  if (text.startsWith("!") && text.slice(1).trim() !== "") return { _tag: "Shell", command: text.slice(1).trim() }
  const note = /^#\s+(\S.*)$/.exec(text)
  if (note !== null && !pasted && !text.includes("\n")) return { _tag: "Memory", note: note[1]!.trim() }
  return undefined
}

/** A file mention: the path, and the lines asked for (`:10-40`, `:12`). */
export interface Mention {
  readonly written: string
  readonly path: string
  readonly from?: number
  readonly to?: number
}

const IMAGE = /\.(png|jpe?g|gif|webp)$/i
const TRAILING = new Set(".,;:!?)]}'\"")

/** The `@path[:from[-to]]` mentions of `text` (at its start or after a space), once each, images left out. */
export const mentions = (text: string): ReadonlyArray<Mention> => {
  const found: Array<Mention> = []
  for (const match of text.matchAll(/(?<=^|\s)@([^\s`]+)/g)) {
    const raw = trimEndWhile(match[1]!, (char) => TRAILING.has(char))
    const range = /^(.+?):(\d+)(?:-(\d+))?$/.exec(raw)
    const path = range === null ? raw : range[1]!
    if (path === "" || IMAGE.test(path) || found.some((m) => m.written === raw)) continue
    const from = range === null ? undefined : Number(range[2])
    const to = range === null ? undefined : range[3] === undefined ? from : Number(range[3])
    found.push({ written: raw, path, ...(from === undefined ? {} : { from }), ...(to === undefined ? {} : { to }) })
  }
  return found
}

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
