/**
 * A turn's outcome as the session log tells it, for a request whose runner could not answer (it
 * stopped, froze, or lost the session): the store is the truth.
 *
 * - Its commit is recorded (`SessionFencing.committed`): the turn happened. Its result is rebuilt
 *   from the committed entries: `completed`, or `failed` when it ended on a partial answer.
 * - No commit is recorded, and the runner that asks has taken the session (so no late commit of
 *   the old owner can land, see `SessionStoreSqlFence.ts`): the turn ends `aborted`, nothing of it
 *   stored.
 */
import type { AssistantMessage, Message } from "../domain/Message.ts"
import type { TurnResult } from "../domain/Turn.ts"
import * as Usage from "../domain/Usage.ts"
import type { CommittedTurn } from "../services/SessionFencing.ts"

/** What the result of a turn whose runner stopped before committing says. */
export const LOST_TURN_ERROR = "the runner running this turn stopped before it ended; nothing it did was saved"

/** What a result rebuilt from the log says when its turn failed (the reason was not stored). */
export const FAILED_ELSEWHERE = "the turn failed on a runner that stopped before answering; what it completed was saved"

const isMessage = (entry: CommittedTurn["entries"][number]): entry is Message =>
  entry.role === "user" || entry.role === "assistant" || entry.role === "tool" || entry.role === "system"

/** The result of a turn lost with its runner: aborted, nothing saved. */
export const aborted = (requestId: string, sessionKey: string): TurnResult => ({
  turnId: `lost-${requestId}`,
  sessionKey,
  status: "aborted",
  messages: [],
  followUps: [],
  iterations: 0,
  usage: Usage.empty,
  error: LOST_TURN_ERROR
})

/**
 * The result of a turn whose commit is in the log, rebuilt from it (`turn` holds its entries only:
 * those from `from` on). Usage and follow-ups are not stored, so they are empty; `iterations`
 * counts the model's answers.
 */
export const committed = (requestId: string, turn: CommittedTurn, from = 0): TurnResult => {
  const messages = turn.entries.filter(isMessage)
  const answers = messages.filter((m): m is AssistantMessage => m.role === "assistant")
  const last = answers.at(-1)
  const failed = last === undefined || last.partial === true || (last.toolCalls ?? []).length > 0
  return {
    // a `Send` request's later turn: its own id, after the entries of the turns before it
    turnId: from === 0 ? `committed-${requestId}` : `committed-${requestId}+${from}`,
    sessionKey: turn.sessionKey,
    status: failed ? "failed" : "completed",
    ...(failed || last === undefined ? {} : { finalMessage: last }),
    messages,
    followUps: [],
    iterations: answers.length,
    usage: Usage.empty,
    ...(failed ? { error: FAILED_ELSEWHERE } : {})
  }
}
