/**
 * The pure parts of the chat's prompt syntax, replay and rewind: what a typed line asks for (`!cmd`,
 * `# note`, `@path[:from-to]`), how a message with attachments is shown again, which turns a
 * replay shows, and which user messages and turns a rewind offers and undoes.
 */
import { describe, expect, it } from "@effect/vitest"
import { Message, type SessionLog } from "effect-agent-loop"
import { choices, turnsFrom } from "../../src/cli/commands/rewind.ts"
import { mentions, special } from "../../src/cli/input/promptSyntax.ts"
import { lastTurns, ownText, typed } from "../../src/cli/output/replay.ts"

const outcome = (turnId: string): SessionLog.SessionEntry => ({
  role: "outcome",
  turnId,
  status: "completed",
  startedAt: 0,
  endedAt: 1,
  iterations: 1,
  usage: { inputTokens: 1, outputTokens: 1 }
})

describe("prompt syntax", () => {
  it("!cmd is a command, typed or pasted; # note only typed, on one line, with text", () => {
    expect(special("!git status", false)).toEqual({ _tag: "Shell", command: "git status" })
    expect(special("!git status", true)).toEqual({ _tag: "Shell", command: "git status" })
    expect(special("!", false)).toBeUndefined()
    expect(special("# always use pnpm", false)).toEqual({ _tag: "Memory", note: "always use pnpm" })
    expect(special("# always use pnpm", true)).toBeUndefined()
    expect(special("# title\nbody", false)).toBeUndefined()
    expect(special("#1 bug is this", false)).toBeUndefined()
    expect(special("what is # for?", false)).toBeUndefined()
  })

  it("@path and @path:FROM-TO are mentions; images, sentence ends and repeats are not", () => {
    expect(mentions("see @src/app.ts, @notes.md:10-40 and @a.txt:7. Also @shot.png @src/app.ts and mail@example.com")).toEqual([
      { written: "src/app.ts", path: "src/app.ts" },
      { written: "notes.md:10-40", path: "notes.md", from: 10, to: 40 },
      { written: "a.txt:7", path: "a.txt", from: 7, to: 7 }
    ])
  })
})

describe("replay", () => {
  it("a message is shown as typed: attached files and command outputs named on a line", () => {
    const sent = "<user-shell-command>\n$ git --version\ngit version 2\n</user-shell-command>\n\nwhat do @notes.txt:2-3 say?\n\n" +
      "<file path=\"notes.txt\" lines=\"2-3\">\n     2\tx\n</file>"
    expect(typed(sent)).toBe("[!git --version]\nwhat do @notes.txt:2-3 say?\n[@notes.txt]")
    // what /rewind offers again at the prompt: the message as typed
    expect(ownText(sent)).toBe("what do @notes.txt:2-3 say?")
    expect(typed([Message.text("look"), Message.image("image/png", "AAAA")])).toBe("look\n[image]")
  })

  it("the last N turns start at a row of user messages; fewer when the session has fewer", () => {
    const log = [Message.user("a"), Message.assistant("A"), Message.user("hook"), Message.user("b"), Message.assistant("B"), Message.user("c")]
    expect(lastTurns(log, 2)).toEqual({ messages: log.slice(2), shown: 2, total: 3 })
    expect(lastTurns(log, 5)).toEqual({ messages: log, shown: 3, total: 3 })
    expect(lastTurns([], 3)).toEqual({ messages: [], shown: 0, total: 0 })
  })
})

describe("rewind", () => {
  const entries: ReadonlyArray<SessionLog.SessionEntry> = [
    Message.user("first"),
    Message.assistant("one"),
    outcome("t1"),
    Message.user("hook context"),
    Message.user("second"),
    Message.assistant("two"),
    outcome("t2"),
    Message.user("third"),
    Message.assistant("three"),
    outcome("t3")
  ]

  it("offers the typed user messages, newest first, numbered in the view; a hook's message before one is left out", () => {
    expect(choices(entries).map((c) => [c.preview, c.toUserMessage, c.logIndex])).toEqual([["third", 3, 7], ["second", 2, 4], ["first", 0, 0]])
  })

  it("the turns undone are those whose outcome follows the chosen message", () => {
    expect([...turnsFrom(entries, 4)]).toEqual(["t2", "t3"])
    expect([...turnsFrom(entries, 7)]).toEqual(["t3"])
  })

  it("after a rewind, the abandoned branch is offered no more", () => {
    const rewound: ReadonlyArray<SessionLog.SessionEntry> = [...entries, { role: "rewind", cut: 3 }, Message.user("again")]
    expect(choices(rewound).map((c) => c.preview)).toEqual(["again", "first"])
  })
})
