/**
 * The `Server` namespace of the public API (`index.ts`): the loop as an HTTP service
 * (`server/Server.ts`) and its API declaration (`server/Api.ts`), listed by name.
 */
export { DEFAULT_MAX_BODY_BYTES, layer, makeToken, type Options } from "../server/Server.ts"
export {
  AgentLoopApi,
  AlreadyDecided,
  type Approval,
  ApprovalNotFound,
  Authorization,
  Chat,
  ChatRefused,
  type FollowUpAnswer,
  SessionBusy,
  SessionNotFound,
  SteeringFull,
  type SteerAnswer,
  StoreFailed,
  TurnNotFound,
  TurnNotRunning,
  type TurnState
} from "../server/Api.ts"
