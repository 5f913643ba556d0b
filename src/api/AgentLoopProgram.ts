/**
 * The `AgentLoopProgram` namespace of the public API (`index.ts`): the names of
 * `programs/AgentLoopProgram.ts` users need, listed by name; its test hook (`heldSessions`) is in
 * `effect-agent-loop/testing`.
 */
export {
  layer,
  make
} from "../programs/AgentLoopProgram.ts"
