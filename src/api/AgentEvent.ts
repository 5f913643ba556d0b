/**
 * The `AgentEvent` namespace of the public API (`index.ts`): the names of `domain/Event.ts` users
 * need, listed by name, with the event journal's record (`domain/EventJournal.ts`); the event builder the loop uses per streamed delta (`delta`) stays
 * internal.
 */
export {
  AgentEvent,
  ContextCompress,
  ErrorEvent,
  type EventBase,
  type EventKind,
  type EventOf,
  type EventPayload,
  type EventPlace,
  FollowUpQueued,
  InterruptReceived,
  kinds,
  LLMDelta,
  LLMRequest,
  LLMResponse,
  LLMRetry,
  make,
  Resumed,
  SessionSummarize,
  SteeringInjected,
  SubTurnEnd,
  SubTurnOrphan,
  SubTurnResultDelivered,
  SubTurnSpawn,
  ToolExecEnd,
  ToolExecSkipped,
  ToolExecStart,
  TurnEnd,
  TurnStart
} from "../domain/Event.ts"
export { flushKinds, JournaledEvent } from "../domain/EventJournal.ts"
