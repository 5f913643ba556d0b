/**
 * When a reply may leave a turn's messages in the session log (`replyLog.ts`, internal): only when
 * the log range holds exactly the turn's messages, one entry each, then at most its outcome record,
 * and its final answer is one of them; otherwise the reply keeps them.
 */
import { describe, expect, it } from "vitest"
import { Message, type Turn, Usage } from "effect-agent-loop"
import * as ReplyLog from "../../src/cluster/replyLog.ts"

const answer = Message.assistant("done")
const result: Turn.TurnResult = {
  turnId: "t1",
  sessionKey: "s",
  status: "completed",
  finalMessage: answer,
  messages: [Message.user("go"), answer],
  followUps: [],
  iterations: 1,
  usage: Usage.empty
}

describe("a reply without the turn's messages", () => {
  it("leaves out the messages and the final answer, and says where they are and which is the answer", () => {
    const slim = ReplyLog.slim(result, { generation: "g", first: 4, end: 6 })
    expect(slim.log).toEqual({ generation: "g", first: 4, end: 6, final: 1 })
    const { finalMessage: _final, ...rest } = result
    expect(slim.result).toEqual({ ...rest, messages: [] })
    // the same with the turn's outcome record after its messages
    expect(ReplyLog.slim(result, { generation: "g", first: 4, end: 7 }).log).toEqual({ generation: "g", first: 4, end: 7, final: 1 })
  })

  it("keeps them when the range holds another entry too (a compaction record and the outcome), or the answer is not among them", () => {
    expect(ReplyLog.slim(result, { generation: "g", first: 4, end: 8 })).toEqual({ result })
    const elsewhere = { ...result, finalMessage: Message.assistant("other") }
    expect(ReplyLog.slim(elsewhere, { generation: "g", first: 4, end: 6 })).toEqual({ result: elsewhere })
    const { finalMessage: _final, ...unanswered } = result
    const empty: Turn.TurnResult = { ...unanswered, messages: [] }
    expect(ReplyLog.slim(empty, { generation: "g", first: 4, end: 4 })).toEqual({ result: empty })
  })
})
