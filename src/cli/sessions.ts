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

const storeError = (error: { readonly message: string }) => fail(error.message)

const openStore = Effect.gen(function*() {
  const data = dataDir()
  const store = yield* SessionStoreJsonl.make(sessionsDir(data))
  const last = Option.getOrUndefined(yield* readLastSession(data))
  return { store, last, dir: sessionsDir(data) }
})

/** Lists the saved sessions, the last used marked with `*`. */
export const list = Effect.gen(function*() {
  const screen = yield* Screen
  const { store, last, dir } = yield* openStore
  const keys = yield* Effect.catch(store.list, storeError)
  if (keys.length === 0) return yield* screen.line(`no sessions yet in ${dir}`)
  for (const key of [...keys].sort()) {
    const messages = yield* Effect.catch(store.load(key), storeError)
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

/** Prints a session's messages. */
export const show = (key: string) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const { store } = yield* openStore
    const keys = yield* Effect.catch(store.list, storeError)
    if (!keys.includes(key)) return yield* fail(`no session "${key}" (see: agent-loop sessions list)`)
    const messages = yield* Effect.catch(store.load(key), storeError)
    for (const message of messages) yield* screen.text(`${showMessage(message, screen.out)}\n`)
  })
