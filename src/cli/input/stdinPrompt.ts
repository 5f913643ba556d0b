/**
 * The prompt of `run`: its argument, or stdin. `agent-loop run -` and `agent-loop run` with
 * piped input read the prompt from stdin; a prompt argument with piped input gets the input
 * attached after it (as `claude -p` does). Stdin is read whole, up to `MAX_STDIN_BYTES`, and must
 * be UTF-8 text.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { fail } from "../terminal/failure.ts"

/** The most bytes read from stdin; more fails rather than sending a cut prompt. */
export const MAX_STDIN_BYTES = 1024 * 1024

/** Reads all of `input` as UTF-8 text, failing with one line past `max` bytes or on bytes that are not UTF-8. */
export const readAll = (input: NodeJS.ReadableStream, max: number = MAX_STDIN_BYTES) =>
  Effect.flatMap(
    Effect.callback<Uint8Array, string>((resume) => {
      const chunks: Array<Uint8Array> = []
      let size = 0
      const cleanup = () => {
        input.off("data", onData)
        input.off("end", onEnd)
        input.off("error", onError)
      }
      const onData = (chunk: Uint8Array | string) => {
        const bytes = typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk
        size += bytes.length
        if (size > max) {
          cleanup()
          input.pause()
          return resume(Effect.fail(`stdin holds more than ${max} bytes; pass a shorter text (or let the model read the file with read_file)`))
        }
        chunks.push(bytes)
      }
      const onEnd = () => {
        cleanup()
        resume(Effect.succeed(Buffer.concat(chunks)))
      }
      const onError = (error: Error) => {
        cleanup()
        resume(Effect.fail(`cannot read stdin: ${error.message}`))
      }
      input.on("data", onData)
      input.once("end", onEnd)
      input.once("error", onError)
      input.resume()
      return Effect.sync(cleanup)
    }),
    (bytes) =>
      Effect.try({
        try: () => new TextDecoder("utf-8", { fatal: true }).decode(bytes),
        catch: () => "stdin is not UTF-8 text"
      })
  ).pipe(Effect.catch((message) => fail(message)))

/** How the stdin text is attached after a prompt given as an argument. */
export const attach = (prompt: string, input: string): string => `${prompt}\n\n<stdin>\n${input.replace(/\n$/, "")}\n</stdin>`

/**
 * The prompt from the argument (`-` meaning stdin) and stdin. `stdin` is read only when it is not
 * a terminal, or when the argument is `-`. An empty prompt fails with one line.
 */
export const resolvePrompt = (argument: Option.Option<string>, stdin: { readonly isTTY: boolean; readonly read: Effect.Effect<string, unknown> }) =>
  Effect.gen(function*() {
    const given = Option.getOrUndefined(argument)
    let prompt: string
    if (given === "-") prompt = yield* stdin.read
    else if (given === undefined) {
      if (stdin.isTTY) return yield* fail("no prompt: pass it as an argument, or on stdin (echo question | agent-loop run)")
      prompt = yield* stdin.read
    } else {
      const input = stdin.isTTY ? "" : yield* stdin.read
      prompt = input.trim() === "" ? given : attach(given, input)
    }
    if (prompt.trim() === "") return yield* fail("empty prompt: pass it as an argument, or on stdin")
    return prompt
  })
