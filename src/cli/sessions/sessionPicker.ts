/**
 * The session picker of a bare `--resume`: the saved sessions, this workspace's first, newest
 * first (when, how many turns, the first prompt), chosen with the arrow keys and Enter, or by
 * typing its number. Drawn on stderr; stdin is read in raw mode only while it is open.
 */
import * as Effect from "effect/Effect"
import type { SessionInfo } from "../../services/SessionStore.ts"
import { fail } from "../terminal/failure.ts"
import * as Format from "../terminal/format.ts"
import { clean } from "../terminal/safeText.ts"
import { byRecency, timestamp, withStore } from "./listing.ts"
import type * as StoreChoice from "./storeChoice.ts"

/** How many sessions the picker offers (the most recent). */
export const MAX_CHOICES = 20

/** The sessions to offer: readable ones, this workspace's first, each group newest first. */
export const choices = (infos: ReadonlyArray<SessionInfo>, workspace: string): ReadonlyArray<SessionInfo> => {
  const readable = infos.filter((info) => info.problem === undefined).sort(byRecency)
  const here = readable.filter((info) => info.workspace === workspace)
  const elsewhere = readable.filter((info) => info.workspace !== workspace)
  return [...here, ...elsewhere].slice(0, MAX_CHOICES)
}

/** One line of the picker: when, how many turns, the first prompt, and the workspace when not this one. */
export const describe = (info: SessionInfo, workspace: string): string => {
  const when = info.updatedAt === undefined ? "" : timestamp(info.updatedAt)
  const where = info.workspace === workspace ? "" : `  (${info.workspace === undefined ? "no workspace" : Format.truncate(clean(info.workspace), 40)})`
  const preview = info.preview === undefined ? "" : Format.truncate(clean(info.preview), 60)
  return `${when}  ${Format.plural(info.turns ?? 0, "turn")}  ${preview}${where}`
}

/** What a key press does to the picker: move, choose, or cancel. */
type Key = { readonly _tag: "move"; readonly by: number } | { readonly _tag: "digit"; readonly digit: string } | {
  readonly _tag: "enter"
} | { readonly _tag: "cancel" } | { readonly _tag: "backspace" }

/** The keys in one chunk of raw terminal input (arrow keys arrive as escape sequences). */
export const keysOf = (chunk: string): ReadonlyArray<Key> => {
  const keys: Array<Key> = []
  for (let i = 0; i < chunk.length; i++) {
    const rest = chunk.slice(i)
    if (rest.startsWith("\u001b[A") || rest.startsWith("\u001bOA")) (keys.push({ _tag: "move", by: -1 }), i += 2)
    else if (rest.startsWith("\u001b[B") || rest.startsWith("\u001bOB")) (keys.push({ _tag: "move", by: 1 }), i += 2)
    else if (rest[0] === "\r" || rest[0] === "\n") keys.push({ _tag: "enter" })
    else if (rest[0] === "\u0003" || rest[0] === "\u0004" || rest[0] === "q" || rest === "\u001b") keys.push({ _tag: "cancel" })
    else if (rest[0] === "\u007f" || rest[0] === "\b") keys.push({ _tag: "backspace" })
    else if (rest[0]! >= "0" && rest[0]! <= "9") keys.push({ _tag: "digit", digit: rest[0]! })
  }
  return keys
}

const ESC = "\u001b"

/**
 * Where the picker's keys come from: raw terminal input handed to `onData` until the returned
 * function is called. `chat` lends its line editor's (`LineInput.borrowKeys`).
 */
export type KeySource = (onData: (chunk: string) => void) => () => void

/** Stdin in raw mode, for as long as the picker is open. */
const rawStdin = (stdin: NodeJS.ReadStream): KeySource => (onData) => {
  const listener = (data: Buffer) => onData(data.toString("utf8"))
  const wasRaw = stdin.isRaw
  stdin.setRawMode(true)
  stdin.on("data", listener)
  stdin.resume()
  return () => {
    stdin.off("data", listener)
    stdin.setRawMode(wasRaw)
    stdin.pause()
  }
}

/** Draws the list and reads keys until one is chosen (its index) or the picker is cancelled (`undefined`); `/rewind` picks with it too. */
export const choose = (lines: ReadonlyArray<string>, keys: KeySource, write: (text: string) => void) =>
  Effect.callback<number | undefined>((resume) => {
    let selected = 0
    let typed = ""
    let drawn = 0
    const draw = () => {
      const body = lines.map((line, i) => `${i === selected ? `${ESC}[7m>` : " "} ${String(i + 1).padStart(2)}  ${line}${i === selected ? `${ESC}[0m` : ""}`)
      const footer = `↑/↓ and Enter, or type a number${typed === "" ? "" : `: ${typed}`} (q cancels)`
      write(`${drawn > 0 ? `${ESC}[${drawn}A\r${ESC}[J` : ""}${[...body, footer].join("\n")}\n`)
      drawn = body.length + 1
    }
    let release = () => {}
    // the keys go back (and the terminal leaves raw mode) as soon as the picker is done
    const done = (chosen: number | undefined) => {
      release()
      release = () => {}
      resume(Effect.succeed(chosen))
    }
    const onData = (chunk: string) => {
      for (const key of keysOf(chunk)) {
        switch (key._tag) {
          case "move":
            selected = (selected + key.by + lines.length) % lines.length
            typed = ""
            break
          case "digit":
            typed = `${typed}${key.digit}`.slice(-3)
            break
          case "backspace":
            typed = typed.slice(0, -1)
            break
          case "cancel":
            return done(undefined)
          case "enter": {
            const n = Number(typed)
            if (typed === "") return done(selected)
            if (n >= 1 && n <= lines.length) return done(n - 1)
            typed = ""
          }
        }
      }
      draw()
    }
    release = keys(onData)
    draw()
    return Effect.sync(() => release())
  })

/**
 * Offers `infos` (see `choices`) with keys from `keys`, drawn with `write`: the key picked, or
 * `undefined` when there is none to offer or the picker is cancelled.
 */
export const pickFrom = (infos: ReadonlyArray<SessionInfo>, workspace: string, keys: KeySource, write: (text: string) => void) =>
  Effect.gen(function*() {
    const offered = choices(infos, workspace)
    if (offered.length === 0) return undefined
    write("Resume which session?\n")
    const chosen = yield* choose(offered.map((info) => describe(info, workspace)), keys, write)
    return chosen === undefined ? undefined : offered[chosen]!.sessionKey
  })

/**
 * Offers the saved sessions on the terminal and returns the key picked. Fails without a terminal,
 * with no session to offer, or when cancelled.
 */
export const pick = (flags: StoreChoice.StoreFlags, workspace: string) =>
  Effect.gen(function*() {
    const stdin = process.stdin
    if (!stdin.isTTY || !process.stderr.isTTY) {
      return yield* fail("--resume without a key needs a terminal to pick on: pass --resume=KEY (agent-loop sessions list --all shows them)")
    }
    const infos = yield* withStore(flags, ({ list }) => list)
    if (choices(infos, workspace).length === 0) return yield* fail("no saved session to resume yet")
    const chosen = yield* pickFrom(infos, workspace, rawStdin(stdin), (text) => process.stderr.write(text))
    if (chosen === undefined) return yield* fail("no session picked")
    return chosen
  })
