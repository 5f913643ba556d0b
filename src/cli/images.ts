/**
 * Images for `run`: `--image FILE` (repeatable, any readable file) and `@path` mentions in the
 * prompt argument. A mention counts when it names a `.png`, `.jpg`, `.jpeg`, `.gif` or `.webp`
 * file that exists inside the workspace (resolved against it); other mentions (`@someone`,
 * `@README.md`, a path that does not exist) stay plain text. The mention itself stays in the
 * prompt, so the model knows which image is which. The media type comes from the file's first
 * bytes, never its name. An attached file that cannot be read, is too large or is not an image
 * (or a mention outside the workspace) stops the command with one line before anything is sent.
 */
import * as nodePath from "node:path"
import { Effect, FileSystem } from "effect"
import { Base64 } from "effect/encoding"
import * as Message from "../domain/Message.ts"
import { fail } from "./failure.ts"

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
const TRAILING = /[.,;:!?)\]}'"]+$/

/** The paths a prompt mentions as `@path` that name image files by their extension, in order, once each. */
export const imageMentions = (prompt: string): ReadonlyArray<string> => {
  const found: Array<string> = []
  for (const match of prompt.matchAll(/(?:^|\s)@(\S+)/g)) {
    const raw = match[1]!
    const path = IMAGE_EXTENSION.test(raw) ? raw : raw.replace(TRAILING, "")
    if (IMAGE_EXTENSION.test(path) && !found.includes(path)) found.push(path)
  }
  return found
}

/** Reads the image at `path` (as the user wrote `shown`), within `maxBytes`; anything else fails with one line. */
export const readImage = (path: string, shown: string, maxBytes: number) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const info = yield* fs.stat(path).pipe(Effect.catch(() => fail(`cannot read image ${shown}: no such file`)))
    if (info.type !== "File") return yield* fail(`cannot read image ${shown}: not a file`)
    if (Number(info.size) > maxBytes) return yield* fail(`image ${shown} is ${info.size} bytes, over the limit of ${maxBytes} bytes`)
    const bytes = yield* fs.readFile(path).pipe(Effect.catch((error) => fail(`cannot read image ${shown}: ${error.message}`)))
    // read again in full: the file may have grown since stat
    if (bytes.length > maxBytes) return yield* fail(`image ${shown} is ${bytes.length} bytes, over the limit of ${maxBytes} bytes`)
    const mediaType = sniffImageType(bytes)
    if (mediaType === undefined) return yield* fail(`${shown} is not a PNG, JPEG, GIF or WebP image`)
    return Message.image(mediaType, Base64.encode(bytes))
  })

/** Whether `path` is `root` or inside it. */
const inside = (root: string, path: string) => {
  const relative = nodePath.relative(root, path)
  return relative === "" || (!relative.startsWith("..") && !nodePath.isAbsolute(relative))
}

/**
 * The images a prompt mentions: those that exist inside the workspace (symbolic links followed),
 * read as `readImage` does. A mention of an existing file outside the workspace fails.
 */
export const mentionedImages = (prompt: string, workspace: string, maxBytes: number) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const root = yield* Effect.orElseSucceed(fs.realPath(workspace), () => workspace)
    const images: Array<Message.ImageDataPart> = []
    for (const mention of imageMentions(prompt)) {
      const real = yield* Effect.option(fs.realPath(nodePath.resolve(workspace, mention)))
      if (real._tag === "None") continue
      if (!inside(root, real.value)) return yield* fail(`@${mention} is outside the workspace; attach it with --image`)
      images.push(yield* readImage(real.value, `@${mention}`, maxBytes))
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
}) =>
  Effect.gen(function*() {
    const attached = yield* Effect.forEach(options.files, (file) => readImage(nodePath.resolve(file), file, options.maxBytes))
    const mentioned = options.mentionsIn === undefined ? [] : yield* mentionedImages(options.mentionsIn, options.workspace, options.maxBytes)
    const images = [...attached, ...mentioned]
    return images.length === 0 ? options.prompt : [Message.text(options.prompt), ...images] as ReadonlyArray<Message.ContentPart>
  })
