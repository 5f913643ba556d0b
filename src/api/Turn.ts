/**
 * The `Turn` namespace of the public API (`index.ts`): the names of `domain/Turn.ts` users need,
 * listed by name; the router's reply builder stays internal.
 */
export {
  CompactResult,
  Inbound,
  Outbound,
  SteerAck,
  TurnInfo,
  TurnPhase,
  TurnResult,
  TurnStatus
} from "../domain/Turn.ts"
