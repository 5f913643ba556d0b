/**
 * What a line typed at the chat's prompt can ask for besides text, as in Claude Code:
 *
 * - `!cmd`: run `cmd` now (`chat.ts` runs it through `exec`); its output goes with the next message.
 * - `# note`: a single line typed (not pasted) appends `note` to the memory file.
 * - `@path` and `@path:10-40` anywhere in a message: that file's text (those lines) goes with the
 *   message, read by the loop's own `read_file` tool (`commands/promptActions.ts`), so with its
 *   rules: confined to the workspace (and added directories), at most its bytes, and the permission
 *   rules' `Read(…)` denials (a rule that asks refuses the mention: nobody is asked about a mention).
 *   A mention that names no file stays text (`@someone`); an image (`@shot.png`) is attached as an
 *   image (`images.ts`).
 */
import { trimEndWhile } from "../../domain/text.ts"

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
