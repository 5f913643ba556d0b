/**
 * The `Replay` namespace of the public API (`index.ts`): the names of `layers/providers/Replay.ts`
 * users need, listed by name; how it compares and describes requests stays internal.
 */
export {
  CassetteEntry,
  fromEntries,
  readCassette,
  record,
  RecordedRequest,
  replay
} from "../layers/providers/Replay.ts"
