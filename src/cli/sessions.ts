/**
 * `agent-loop sessions list` and `sessions show KEY`: what is saved under the data directory.
 */
import { Effect, Option } from "effect"
import type { Message } from "../domain/Message.ts"
import * as SessionStoreJsonl from "../layers/SessionStoreJsonl.ts"
import { dataDir, readLastSession, sessionsDir } from "./dataDir.ts"
import { fail } from "./failure.ts"
import * as Format from "./format.ts"
import { Screen } from "./screen.ts"

/** The session store of the data directory, its failures as one-line `CliFailure`s. */
const openStore = Effect.gen(function*() {
  const data = dataDir()
  const dir = sessionsDir(data)
  const store = yield* SessionStoreJsonl.make(dir)
  const last = Option.getOrUndefined(yield* readLastSession(data))
  const storeError = (error: { readonly message: string }) => fail(error.message)
  return {
    dir,
    last,
    list: Effect.catch(store.list, storeError),
    load: (key: string) => Effect.catch(store.load(key), storeError)
  }
})

/** Lists the saved sessions, the last used marked with `*`. */
export const list = Effect.gen(function*() {
  const screen = yield* Screen
  const { dir, last, list, load } = yield* openStore
  const keys = yield* list
  if (keys.length === 0) return yield* screen.line(`no sessions yet in ${dir}`)
  for (const key of [...keys].sort()) {
    const messages = yield* load(key)
    yield* screen.text(`${key === last ? "*" : " "} ${key}  ${screen.out.dim(Format.plural(messages.length, "message"))}\n`)
  }
})

const showMessage = (message: Message, style: { readonly dim: (s: string) => string; readonly bold: (s: string) => string }) => {
  switch (message.role) {
    case "system":
      return `${style.bold("system")}: ${style.dim(Format.truncate(message.content, 200))}`
    case "user":
      return `${style.bold("user")}: ${message.content}`
    case "assistant": {
      const calls = (message.toolCalls ?? []).map((call) => `\n  ${style.dim(`→ ${call.name} ${Format.args(call.arguments)}`)}`)
      return `${style.bold("assistant")}: ${message.content}${calls.join("")}`
    }
    case "tool":
      return `${style.bold(`tool ${message.toolName}`)}${message.isError ? " (error)" : ""}: ${style.dim(Format.truncate(message.content, 200))}`
  }
}

/** Prints a session's messages; a key with no saved messages is reported as no session. */
export const show = (key: string) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const { load } = yield* openStore
    const messages = yield* load(key)
    if (messages.length === 0) return yield* fail(`no session "${key}" (see: agent-loop sessions list)`)
    for (const message of messages) yield* screen.text(`${showMessage(message, screen.out)}\n`)
  })
