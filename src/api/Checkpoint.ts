/**
 * The `Checkpoint` namespace of the public API (`index.ts`): the names of `domain/Checkpoint.ts`
 * users need, listed by name; the size measure the loop keeps them under stays internal. With them,
 * a turn paused on a call waiting for approval as a store keeps it (`domain/PausedTurn.ts`).
 */
export {
  Checkpoint,
  type Checkpointing,
  CheckpointOutgrown,
  INTERRUPTED_BY_CRASH,
  TurnCheckpoint
} from "../domain/Checkpoint.ts"
export { PausedApproval, PausedCall } from "../domain/PausedTurn.ts"
