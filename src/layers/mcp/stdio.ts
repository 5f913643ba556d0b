/**
 * What a stdio server writes besides its JSON-RPC messages. `effect/ai`'s stdio transport drops
 * stderr and treats any line on stdout that is not JSON-RPC as a broken connection; real servers
 * print banners and log lines to both. So the process is spawned through a spawner that:
 *
 * - reads stderr itself: every line goes to the debug log, and the last lines are kept so that a
 *   failure can show them;
 * - passes on only the stdout lines that look like JSON-RPC (the rest go to the debug log); a line
 *   that grows past the message limit is passed on as it is, so the transport's own bound stops it.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"

/** The last lines a server wrote to stderr, and to stdout besides its messages. */
export interface StderrTail {
  /** The last lines, oldest first, each after `stderr: ` or `stdout: ` (a line still being written on stderr is included). */
  readonly lines: () => ReadonlyArray<string>
  /** Completes when stderr has ended (the process and anything holding its stderr are gone). */
  readonly ended: Effect.Effect<void>
}

/** How many stderr lines are kept, and how long each may be. */
const TAIL_LINES = 10
const LINE_WIDTH = 400

const clip = (line: string) => line.length > LINE_WIDTH ? `${line.slice(0, LINE_WIDTH)}…` : line

/**
 * Splits text into lines across chunks. Each chunk is searched once and the unfinished rest is
 * kept in pieces, so a long line costs time in proportion to its length.
 */
const lineSplitter = () => {
  let pieces: Array<string> = []
  let length = 0
  const take = () => {
    const taken = pieces.join("")
    pieces = []
    length = 0
    return taken
  }
  return {
    push: (chunk: string): Array<string> => {
      const lines: Array<string> = []
      let start = 0
      let index: number
      while ((index = chunk.indexOf("\n", start)) >= 0) {
        pieces.push(chunk.slice(start, index))
        lines.push(take().replace(/\r$/, ""))
        start = index + 1
      }
      if (start < chunk.length) {
        pieces.push(chunk.slice(start))
        length += chunk.length - start
      }
      return lines
    },
    /** The length of the unfinished line. */
    restLength: () => length,
    /** The unfinished line, which stays. */
    rest: () => pieces.join(""),
    /** The unfinished line, which goes. */
    take
  }
}

const makeTail = (server: string, done: Deferred.Deferred<void>, scrub: (text: string) => string) => {
  const kept: Array<string> = []
  const split = lineSplitter()
  const keep = (line: string) => {
    kept.push(line)
    if (kept.length > TAIL_LINES) kept.shift()
  }
  return {
    /** A stdout line that was not a message (a banner, a log line, a prompt). */
    note: (line: string) => keep(`stdout: ${clip(line)}`),
    feed: (chunk: string) =>
      Effect.gen(function*() {
        const lines = split.push(chunk)
        // A line without its newline yet is cut at its width: a flood without newlines cannot grow it.
        if (split.restLength() > LINE_WIDTH) lines.push(split.take())
        for (const line of lines) {
          keep(`stderr: ${clip(line)}`)
          yield* Effect.logDebug(`MCP server "${server}" stderr: ${scrub(line)}`)
        }
      }),
    tail: {
      lines: () => (split.restLength() === 0 ? kept : [...kept, `stderr: ${clip(split.rest())}`]).slice(-TAIL_LINES),
      ended: Deferred.await(done)
    } satisfies StderrTail
  }
}

const encoder = new TextEncoder()

/** A line a JSON-RPC peer could have sent: an object that names the protocol. */
const looksLikeJsonRpc = (line: string) => line.trimStart().startsWith("{") && line.includes("\"jsonrpc\"")

/**
 * Stdout without the lines that are not JSON-RPC. Lines are passed on whole; a line longer than
 * `maxChars` is passed on as it comes, so that the transport fails on its own message limit
 * instead of this buffer growing without end.
 */
const jsonRpcLines = <E>(
  stdout: Stream.Stream<Uint8Array, E>,
  server: string,
  maxChars: number,
  scrub: (text: string) => string,
  note: (line: string) => void
): Stream.Stream<Uint8Array, E> =>
  Stream.suspend(() => {
    const split = lineSplitter()
    let oversized = false
    return stdout.pipe(
      Stream.decodeText(),
      Stream.mapEffect((chunk) =>
        Effect.gen(function*() {
          const out: Array<string> = []
          const lines = split.push(chunk)
          for (const line of lines) {
            if (oversized || looksLikeJsonRpc(line)) out.push(`${line}\n`)
            else if (line.trim() !== "") {
              note(line)
              yield* Effect.logDebug(`MCP server "${server}" stdout (not JSON-RPC, ignored): ${scrub(clip(line))}`)
            }
            oversized = false
          }
          if (split.restLength() > maxChars) {
            oversized = true
            out.push(split.take())
          }
          return out.length === 0 ? [] : [encoder.encode(out.join("")) as Uint8Array]
        })
      ),
      Stream.flattenIterable
    )
  })

/**
 * A spawner that starts processes through `inner` and observes them as the module doc says. The
 * stderr reader runs in `readerScope`, which outlives the server's own scope, so the last lines a
 * dying server writes are still read after its transport has closed.
 */
export const observingSpawner = (options: {
  readonly inner: ChildProcessSpawner.ChildProcessSpawner["Service"]
  readonly server: string
  readonly readerScope: Scope.Scope
  readonly maxMessageChars: number
  /** What every logged line goes through: servers print their environment, tokens and all. */
  readonly scrub: (text: string) => string
}): Effect.Effect<{ readonly spawner: ChildProcessSpawner.ChildProcessSpawner["Service"]; readonly stderr: StderrTail }> =>
  Effect.gen(function*() {
    const done = yield* Deferred.make<void>()
    const { feed, note, tail } = makeTail(options.server, done, options.scrub)
    const spawner = ChildProcessSpawner.make((command) =>
      Effect.gen(function*() {
        // A process that never started has no stderr to wait for.
        const handle = yield* options.inner.spawn(command).pipe(Effect.onError(() => Deferred.succeed(done, undefined)))
        yield* handle.stderr.pipe(
          Stream.decodeText(),
          Stream.runForEach(feed),
          Effect.ignore,
          Effect.ensuring(Deferred.succeed(done, undefined)),
          Effect.forkIn(options.readerScope)
        )
        return ChildProcessSpawner.makeHandle({
          ...handle,
          stdout: jsonRpcLines(handle.stdout, options.server, options.maxMessageChars, options.scrub, note),
          stderr: Stream.empty
        })
      })
    )
    return { spawner, stderr: tail }
  })
