/**
 * The outcomes of turns that did not run here, and their `TurnEnd`s, built in this one place: a
 * request refused or failed on its way (`unrun`), and a turn's outcome as the session log tells it,
 * for a request whose runner could not answer (it stopped, froze, or lost the session): the store
 * is the truth.
 *
 * - Its commit is recorded (`SessionFencing.committed`): the turn happened. Its result is rebuilt
 *   from the committed entries: `completed`, or `failed` when it ended on a partial answer.
 * - No commit is recorded, and the runner that asks has taken the session (so no late commit of
 *   the old owner can land, see `layers/internal/sessionStoreSqlFence.ts`): the turn ends `aborted`, nothing of it
 *   stored.
 */
import * as AgentEvent from "../domain/Event.ts"
import type { AssistantMessage, Message } from "../domain/Message.ts"
import type { TurnResult, TurnStatus } from "../domain/Turn.ts"
import * as Usage from "../domain/Usage.ts"
import type { CommittedTurn } from "../services/SessionFencing.ts"

/** What the result of a turn whose runner stopped before committing says. */
export const LOST_TURN_ERROR = "the runner running this turn stopped before it ended; nothing it did was saved"

/** What a result rebuilt from the log says when its turn failed (the reason was not stored). */
export const FAILED_ELSEWHERE = "the turn failed on a runner that stopped before answering; what it completed was saved"

const isMessage = (entry: CommittedTurn["entries"][number]): entry is Message =>
  entry.role === "user" || entry.role === "assistant" || entry.role === "tool" || entry.role === "system"

/** The result of a turn that did not run (refused, failed on its way, lost): nothing of it stored, no usage. */
export const unrun = (turnId: string, sessionKey: string, status: TurnStatus, error: string): TurnResult => ({
  turnId,
  sessionKey,
  status,
  messages: [],
  followUps: [],
  iterations: 0,
  usage: Usage.empty,
  error
})

/**
 * The `TurnEnd` of a turn whose own was not published where it is watched (it was refused or lost,
 * or ended on another runner): its result as an event, taking no time.
 */
export const turnEnd = (result: TurnResult, at: number): AgentEvent.EventOf<"TurnEnd"> =>
  AgentEvent.make("TurnEnd", { turnId: result.turnId, sessionKey: result.sessionKey, iteration: 0, depth: 0 }, at, {
    status: result.status,
    iterations: result.iterations,
    durationMs: 0,
    usage: result.usage,
    ...(result.error === undefined ? {} : { error: result.error })
  })

/** The result of a turn lost with its runner: aborted, nothing saved. */
export const aborted = (requestId: string, sessionKey: string): TurnResult => unrun(`lost-${requestId}`, sessionKey, "aborted", LOST_TURN_ERROR)

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
