/**
 * The `Checkpoint` namespace of the public API (`index.ts`): the names of `domain/Checkpoint.ts`
 * users need, listed by name; the size measure the loop keeps them under stays internal.
 */
export {
  Checkpoint,
  type Checkpointing,
  CheckpointOutgrown,
  INTERRUPTED_BY_CRASH,
  TurnCheckpoint
} from "../domain/Checkpoint.ts"
