/**
 * The `SessionLog` namespace of the public API (`index.ts`): the names of `domain/SessionLog.ts`
 * users need, listed by name; the loop's summary timeout stays internal.
 */
export {
  Compaction,
  describe,
  foldEntry,
  INTERRUPTED_RESULT,
  isCompaction,
  isMessage,
  isOutcome,
  Meta,
  outcomes,
  rebase,
  repair,
  Rewind,
  rewindTo,
  SessionEntry,
  SUMMARY_PREFIX,
  TurnOutcome,
  view
} from "../domain/SessionLog.ts"
