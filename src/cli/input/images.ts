/**
 * Images for `run`: `--image FILE` (repeatable, any readable file) and `@path` mentions in the
 * prompt argument. A mention counts when it names a `.png`, `.jpg`, `.jpeg`, `.gif` or `.webp`
 * file that exists inside the workspace (resolved against it); other mentions (`@someone`,
 * `@README.md`, a path that does not exist) stay plain text. The mention itself stays in the
 * prompt, so the model knows which image is which. The media type comes from the file's first
 * bytes, never its name. An attached file that cannot be read, is too large or is not an image
 * (or a mention outside the workspace) stops the command with one line before anything is sent.
 * So does a mention the deny rules keep from `read_file` (`Read(secret.png)`), as written or
 * where its links lead; `--image` is the user's own choice of a file and is not matched.
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Base64 from "effect/encoding/Base64"
import * as Message from "../../domain/Message.ts"
import { trimEndWhile } from "../../domain/text.ts"
import { problemOf, readConfined } from "../../layers/internal/readConfined.ts"
import type { PathRule } from "../../services/Workspace.ts"
import { fail } from "../terminal/failure.ts"

/** The media type of an image from its first bytes (PNG, JPEG, GIF, WebP), or `undefined`. */
export const sniffImageType = (bytes: Uint8Array): string | undefined => {
  const ascii = (from: number, to: number) => String.fromCharCode(...bytes.subarray(from, to))
  if (bytes.length >= 8 && [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a].every((b, i) => bytes[i] === b)) return "image/png"
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "image/jpeg"
  if (bytes.length >= 6 && (ascii(0, 6) === "GIF87a" || ascii(0, 6) === "GIF89a")) return "image/gif"
  if (bytes.length >= 12 && ascii(0, 4) === "RIFF" && ascii(8, 12) === "WEBP") return "image/webp"
  return undefined
}

const IMAGE_EXTENSION = /\.(png|jpe?g|gif|webp)$/i

/** Characters a sentence may put right after a mention (`see @a.png, then`). */
const TRAILING = new Set(".,;:!?)]}'\"")

/** The paths a prompt mentions as `@path` that name image files by their extension, in order, once each. */
export const imageMentions = (prompt: string): ReadonlyArray<string> => {
  const found: Array<string> = []
  for (const match of prompt.matchAll(/(?:^|\s)@(\S+)/g)) {
    const raw = match[1]!
    const path = IMAGE_EXTENSION.test(raw) ? raw : trimEndWhile(raw, (char) => TRAILING.has(char))
    if (IMAGE_EXTENSION.test(path) && !found.includes(path)) found.push(path)
  }
  return found
}

/** The deny rule that keeps `read_file` from `path` (absolute) inside `root`, if any. */
const denyingRule = (pathRule: PathRule | undefined, root: string, path: string): string | undefined => {
  const relative = nodePath.relative(root, path)
  if (pathRule === undefined || relative.startsWith("..") || nodePath.isAbsolute(relative)) return undefined
  const verdict = pathRule("read_file", relative === "" ? "." : relative.split(nodePath.sep).join("/"))
  return verdict?._tag === "Deny" ? verdict.rule : undefined
}

const deniedLine = (shown: string, rule: string) => `${shown} is denied by the permission rule "${rule}"`

/**
 * Reads the image at `path` (as the user wrote `shown`), never more than a chunk past `maxBytes`
 * whatever `stat` says (`/proc/self/pagemap` says 0 and reads forever); anything else fails with
 * one line. With `within` the file must stay inside that directory, links resolved, and with
 * `denied` its real path must not be denied (the deny rule's text, or `undefined`).
 */
export const readImage = (path: string, shown: string, maxBytes: number, within?: string, denied?: (real: string) => string | undefined) =>
  Effect.gen(function*() {
    const read = yield* readConfined(path, { maxBytes, warn: false, ...(within === undefined ? {} : { within }) })
    if (read._tag === "Skipped") return yield* fail(`${shown} is outside the workspace; attach it with --image`)
    const rule = read._tag === "Read" ? denied?.(read.real) : undefined
    if (rule !== undefined) return yield* fail(deniedLine(shown, rule))
    if (read._tag === "Read" && read.truncated) {
      return yield* fail(`image ${shown} is ${read.size > maxBytes ? `${read.size} bytes` : "larger"}, over the limit of ${maxBytes} bytes`)
    }
    if (read._tag === "NotRegular") return yield* fail(`cannot read image ${shown}: not a file`)
    const problem = problemOf(read, maxBytes)
    if (problem !== undefined || read._tag !== "Read") return yield* fail(`cannot read image ${shown}: ${problem ?? "unreadable"}`)
    const bytes = read.bytes
    const mediaType = sniffImageType(bytes)
    if (mediaType === undefined) return yield* fail(`${shown} is not a PNG, JPEG, GIF or WebP image`)
    return Message.image(mediaType, Base64.encode(bytes))
  })

/**
 * The images a prompt mentions: those that exist inside the workspace, read as `readImage` does,
 * checked on the opened file. A mention of an existing file outside the workspace (by its path or
 * through a symbolic link) fails, and so does one that `pathRule` (the permission rules) denies to
 * `read_file`, as written or where it really leads.
 */
export const mentionedImages = (prompt: string, workspace: string, maxBytes: number, pathRule?: PathRule) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const root = yield* Effect.orElseSucceed(fs.realPath(workspace), () => workspace)
    const images: Array<Message.ImageDataPart> = []
    for (const mention of imageMentions(prompt)) {
      const path = nodePath.resolve(workspace, mention)
      if (!(yield* Effect.orElseSucceed(fs.exists(path), () => false))) continue
      const rule = denyingRule(pathRule, workspace, path)
      if (rule !== undefined) return yield* fail(deniedLine(`@${mention}`, rule))
      images.push(yield* readImage(path, `@${mention}`, maxBytes, workspace, (real) => denyingRule(pathRule, root, real)))
    }
    return images
  })

/**
 * The turn's input: the prompt, and the images of `--image` then of its mentions (`mentionsIn` is
 * the text typed on the command line; piped input is never searched for mentions). Text alone
 * when there are none.
 */
export const promptInput = (options: {
  readonly prompt: string
  readonly mentionsIn: string | undefined
  readonly files: ReadonlyArray<string>
  readonly workspace: string
  readonly maxBytes: number
  /** The permission rules' path rule, for the mentions. */
  readonly pathRule?: PathRule
}) =>
  Effect.gen(function*() {
    const attached = yield* Effect.forEach(options.files, (file) => readImage(nodePath.resolve(file), file, options.maxBytes))
    const mentioned = options.mentionsIn === undefined
      ? []
      : yield* mentionedImages(options.mentionsIn, options.workspace, options.maxBytes, options.pathRule)
    const images = [...attached, ...mentioned]
    return images.length === 0 ? options.prompt : [Message.text(options.prompt), ...images] as ReadonlyArray<Message.ContentPart>
  })
