/**
 * The threads that read and match files for `grep`: each takes a batch of files (opened through
 * their directory's descriptor, `walk.ts`), reads each whole, passes by one that cannot hold a
 * match (the pattern's required text is not in its bytes, `grepPattern.ts`), and matches the
 * JavaScript pattern line by line in the rest. Whether ripgrep chose the files or the built-in
 * walk did, what a file shows comes from here, so both give the same lines.
 *
 * A pattern can backtrack for ever (`(a+)+$`): each thread counts the files it has finished in
 * shared memory, and `stalled` — called by the caller every deadline on the Effect `Clock` — names
 * a file a thread has been on since the call before, so the caller can stop the search (closing
 * the pool terminates the threads, which V8 does even inside a running regex).
 */
import { Worker } from "node:worker_threads"
import { REGEX_THREAD_NAME } from "./lineMatcher.ts"
import type { LineMatch } from "./lineMatcher.ts"
import { SNIFF_BYTES } from "./textBytes.ts"

/** What the threads search for and how. */
export interface SearchSettings {
  readonly source: string
  readonly flags: string
  /** Lines longer than this many UTF-16 code units are cut, with `…`. */
  readonly maxLineLength: number
  /** Larger files are not read (`large`). */
  readonly maxFileBytes: number
  /** Texts one of which every match contains (`requiredLiterals`), or `undefined`. */
  readonly literals: ReadonlyArray<string> | undefined
  /** Whether the pattern may be run over whole texts to find the lines to try (`scansWholeText`). */
  readonly scan: boolean
}

/** What searching one file gave. */
export type FileResult =
  /** Its first matching lines (0-based index, text cut), up to the batch's limit; none is no match. */
  | { readonly _tag: "Text"; readonly found: ReadonlyArray<LineMatch> }
  /** A binary file (NUL in its first bytes): in a walk, one the pattern matches in; named directly, any. */
  | { readonly _tag: "Binary" }
  /** Over `maxFileBytes`: not read. */
  | { readonly _tag: "Large" }
  /** Not a regular file (any more), or gone. */
  | { readonly _tag: "Gone"; readonly code: string }

/** A file to search: the path its directory's descriptor reaches it by, and whether the model named it. */
export interface FileRequest {
  readonly path: string
  readonly direct: boolean
}

/** Threads searching with one pattern. */
export interface SearchPool {
  /** Searches `files` in one thread; `names` name them for `stalled`. At most `limit` lines per file. */
  readonly examine: (
    files: ReadonlyArray<FileRequest>,
    names: ReadonlyArray<string>,
    limit: number
  ) => Promise<ReadonlyArray<FileResult>>
  /** Starts a thread now, if none is running, so that it is ready when the first files are. */
  readonly warm: () => void
  /** The name of a file some thread has not finished since the previous call, if any. */
  readonly stalled: () => string | undefined
  /** Terminates the threads; pending searches fail. */
  readonly close: () => Promise<void>
}

/** The threads' program: plain JavaScript, so it runs the same from source and from a build. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads")
const fs = require("node:fs")
const { source, flags, maxLineLength, maxFileBytes, literals, scan, progress, sniffBytes } = workerData
const regex = new RegExp(source, flags)
// over a whole text: where its matches start are the only lines worth trying
const scanner = scan ? new RegExp(source, flags + "gm") : undefined
const done = new Int32Array(progress)
const OPEN = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK
const ignoreCase = flags.includes("i")
const needles = literals === undefined || ignoreCase ? undefined : literals.map((text) => Buffer.from(text, "utf8"))
const escape = (text) => text.replace(/[\\\\^$.*+?()[\\]{}|\\/-]/g, "\\\\$&")
const folded = literals !== undefined && ignoreCase
  ? new RegExp(literals.map((text) => escape(Buffer.from(text, "utf8").toString("latin1"))).join("|"), "i")
  : undefined
const decoder = new TextDecoder()
let buffer = Buffer.allocUnsafe(1 << 20)

const cut = (line) => line.length > maxLineLength ? line.slice(0, maxLineLength) + "\\u2026" : line
/** The line from start to end (a LF at end, or the text's end), without the CR of a CRLF. */
const lineAt = (text, start, end) =>
  end < text.length && end > start && text.charCodeAt(end - 1) === 13 ? text.slice(start, end - 1) : text.slice(start, end)

/** The matching lines of text (a binary file: whether any matches). */
const matchLines = (text, binary, limit) => {
  const found = []
  if (scanner !== undefined) {
    let line = 0
    let lineStart = 0
    scanner.lastIndex = 0
    for (;;) {
      const match = scanner.exec(text)
      if (match === null) break
      let lf = text.indexOf("\\n", lineStart)
      while (lf !== -1 && lf < match.index) {
        line++
        lineStart = lf + 1
        lf = text.indexOf("\\n", lineStart)
      }
      // a match at the very end of a text ending in LF is on no line
      if (lineStart >= text.length) break
      const end = lf === -1 ? text.length : lf
      const s = lineAt(text, lineStart, end)
      if (regex.test(s)) {
        if (binary) return true
        found.push([line, cut(s)])
        if (found.length >= limit) break
      }
      if (lf === -1) break
      scanner.lastIndex = lf + 1
    }
    return binary ? false : found
  }
  let line = 0
  for (let start = 0; start < text.length; line++) {
    const lf = text.indexOf("\\n", start)
    const end = lf === -1 ? text.length : lf
    const s = lineAt(text, start, end)
    if (regex.test(s)) {
      if (binary) return true
      found.push([line, cut(s)])
      if (found.length >= limit) break
    }
    start = end + 1
  }
  return binary ? false : found
}

const examine = (path, direct, limit) => {
  let fd
  try {
    fd = fs.openSync(path, OPEN)
  } catch (error) {
    return { _tag: "Gone", code: String(error.code ?? error.message) }
  }
  try {
    const info = fs.fstatSync(fd)
    if (!info.isFile()) return { _tag: "Gone", code: "EINVAL" }
    if (info.size > maxFileBytes) return { _tag: "Large" }
    if (buffer.length < info.size) buffer = Buffer.allocUnsafe(Math.max(info.size, buffer.length * 2))
    let size = 0
    while (size < info.size) {
      const read = fs.readSync(fd, buffer, size, info.size - size, size)
      if (read === 0) break
      size += read
    }
    const bytes = buffer.subarray(0, size)
    const binary = bytes.subarray(0, sniffBytes).includes(0)
    if (binary && direct) return { _tag: "Binary" }
    if (needles !== undefined && !needles.some((needle) => bytes.includes(needle))) return { _tag: "Text", found: [] }
    if (folded !== undefined && !folded.test(bytes.latin1Slice(0, size))) return { _tag: "Text", found: [] }
    const result = matchLines(decoder.decode(bytes), binary, limit)
    return binary ? (result ? { _tag: "Binary" } : { _tag: "Text", found: [] }) : { _tag: "Text", found: result }
  } catch (error) {
    return { _tag: "Gone", code: String(error.code ?? error.message) }
  } finally {
    fs.closeSync(fd)
  }
}

parentPort.on("message", ({ id, files, limit }) => {
  const results = []
  for (const [path, direct] of files) {
    results.push(examine(path, direct, limit))
    Atomics.add(done, 0, 1)
  }
  parentPort.postMessage({ id, results })
})
`

interface Pending {
  readonly id: number
  readonly names: ReadonlyArray<string>
  readonly resolve: (results: ReadonlyArray<FileResult>) => void
  readonly reject: (error: Error) => void
}

interface Thread {
  readonly worker: Worker
  readonly done: Int32Array
  readonly queue: Array<Pending>
  queued: number
  /** Files finished in batches already answered. */
  answered: number
  lastSeen: number
  busyAtCheck: boolean
}

/** A pool of at most `size` threads for `settings`, started as batches need them. */
export const makeSearchPool = (settings: SearchSettings, size: number): SearchPool => {
  const threads: Array<Thread> = []
  let nextId = 0
  let closed = false

  const failAll = (thread: Thread, error: Error) => {
    for (const pending of thread.queue.splice(0)) pending.reject(error)
    thread.queued = 0
  }

  const start = (): Thread => {
    const progress = new SharedArrayBuffer(4)
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      name: REGEX_THREAD_NAME,
      workerData: { ...settings, progress, sniffBytes: SNIFF_BYTES }
    })
    // closing the pool terminates it; it must never be what keeps the process alive
    worker.unref()
    const thread: Thread = { worker, done: new Int32Array(progress), queue: [], queued: 0, answered: 0, lastSeen: 0, busyAtCheck: false }
    worker.on("message", (message: { readonly id: number; readonly results: ReadonlyArray<FileResult> }) => {
      const pending = thread.queue[0]
      if (pending === undefined || pending.id !== message.id) return
      thread.queue.shift()
      thread.queued -= pending.names.length
      thread.answered += pending.names.length
      pending.resolve(message.results)
    })
    worker.on("error", (error) => failAll(thread, error))
    worker.on("exit", () => failAll(thread, new Error("the search thread stopped")))
    threads.push(thread)
    return thread
  }

  const choose = (): Thread => {
    let best: Thread | undefined
    for (const thread of threads) if (best === undefined || thread.queued < best.queued) best = thread
    return best !== undefined && (best.queued === 0 || threads.length >= size) ? best : start()
  }

  return {
    examine: (files, names, limit) =>
      new Promise((resolve, reject) => {
        if (closed) return reject(new Error("the search was stopped"))
        const thread = choose()
        const id = nextId++
        thread.queue.push({ id, names, resolve, reject })
        thread.queued += files.length
        thread.worker.postMessage({ id, files: files.map((file) => [file.path, file.direct]), limit })
      }),
    warm: () => {
      if (!closed && threads.length === 0) start()
    },
    stalled: () => {
      for (const thread of threads) {
        if (thread.queue.length === 0) {
          thread.busyAtCheck = false
          continue
        }
        const done = Atomics.load(thread.done, 0)
        if (thread.busyAtCheck && done === thread.lastSeen) {
          const inBatch = done - thread.answered
          return thread.queue[0]!.names[inBatch] ?? thread.queue[0]!.names[0]
        }
        thread.lastSeen = done
        thread.busyAtCheck = true
      }
      return undefined
    },
    close: async () => {
      closed = true
      await Promise.all(threads.splice(0).map((thread) => {
        failAll(thread, new Error("the search was stopped"))
        return thread.worker.terminate()
      }))
    }
  }
}
