/**
 * Tools, histories and event helpers shared by the loop tests.
 */
import { expect } from "@effect/vitest"
import { Effect, Logger, Schema } from "effect"
import { type AgentEvent, Message, type SessionInfo, Tool } from "effect-agent-loop"

/** A read-only tool answering `echo: <text>`. */
export const echo = Tool.make({
  name: "echo",
  description: "Echoes its text",
  parameters: Schema.Struct({ text: Schema.String }),
  readOnly: true,
  execute: ({ text }) => Effect.succeed(`echo: ${text}`)
})

/** The events of one kind, typed. */
export const ofKind = <K extends AgentEvent.AgentEvent["_tag"]>(events: ReadonlyArray<AgentEvent.AgentEvent>, kind: K): Array<AgentEvent.EventOf<K>> =>
  events.filter((e): e is AgentEvent.EventOf<K> => e._tag === kind)

const call = (id: string) => ({ id, name: "echo", arguments: "{}" })

/** system, user/assistant pairs, a call with its two results in the middle, then more pairs. */
export const longHistory: ReadonlyArray<Message.Message> = [
  Message.system("Earlier summary"),
  Message.user("u1"),
  Message.assistant("a1"),
  Message.user("u2"),
  Message.assistant("", [call("c1"), call("c2")]),
  Message.toolResult(call("c1"), "r1"),
  Message.toolResult(call("c2"), "r2"),
  Message.assistant("a2"),
  Message.user("u3"),
  Message.assistant("a3")
]

/**
 * One message of every kind and shape a store must keep exactly: reasoning, provider blocks, an
 * error result, a partial answer, quotes, a NUL and non-ASCII text.
 */
export const everyKind: ReadonlyArray<Message.Message> = [
  Message.system("Be brief."),
  Message.user("list files\nwith \"quotes\", NUL \u0000 and unicode 会话 🚀"),
  Message.assistant("", [{ id: "c1", name: "list_dir", arguments: "{\"path\":\".\"}" }, { id: "c2", name: "grep", arguments: "{}" }], {
    reasoning: "need to look",
    providerBlocks: [{ provider: "anthropic", data: { type: "thinking", thinking: "need to look", signature: "c2lnbmF0dXJl" } }]
  }),
  Message.toolResult({ id: "c1", name: "list_dir" }, "a.txt\nb.txt"),
  Message.toolResult({ id: "c2", name: "grep" }, "boom", true),
  Message.assistant("half a rep", [], { partial: true })
]

/** A logger keeping warnings, to see what the loop or a store warns about. */
export const captureWarnings = () => {
  const warnings: Array<string> = []
  const logger = Logger.make((options) => {
    if (options.logLevel === "Warn") warnings.push(String(options.message))
  })
  return { warnings, layer: Logger.layer([logger]) }
}

/** The keys of a session listing, every session readable. */
export const keysOf = (infos: ReadonlyArray<SessionInfo>): Array<string> => {
  expect(infos.filter((info) => info.problem !== undefined)).toEqual([])
  return infos.map((info) => info.sessionKey)
}
