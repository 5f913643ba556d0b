/**
 * A session's workspace, as `run` and `chat` leave it behind: a metadata record in the session
 * naming its workspace (so that `--resume` and `sessions list` tell this project's sessions from
 * others'), and the pointer to the session used last in the workspace, which `--continue` follows
 * (kept in the data directory: `dataDir.ts`).
 */
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import type * as Scope from "effect/Scope"
import { SessionStore } from "../../services/SessionStore.ts"
import { writeLastSession } from "../config/dataDir.ts"

/**
 * Records `workspace` in the session, written when the command ends (and when `chat` leaves a
 * session for another), and only into a session that holds something and has none yet: a turn
 * that saved nothing (a hard abort) leaves no session behind. A failure is a warning only.
 */
export const recordWorkspace = (workspace: string, sessionKey: string) =>
  Effect.gen(function*() {
    const store = yield* SessionStore
    const log = yield* store.log(sessionKey)
    if (log.length > 0 && !log.some((entry) => entry.role === "meta")) {
      yield* store.append(sessionKey, [{ role: "meta", workspace }])
    }
  }).pipe(Effect.catch((error) => Effect.logWarning(`cannot record the session's workspace: ${error.message}`)))

/** What remembering needs of the settings (`CliSettings` has all of it). */
export interface SessionSettings {
  /** Whether the session is saved at all (not with `--ephemeral`). */
  readonly persist: boolean
  readonly dataDir: string
  readonly workspace: string
  readonly sessionKey: string
}

/** Points `--continue` at the session now, and records its workspace when the scope closes. */
export const remember = (settings: SessionSettings): Effect.Effect<void, never, SessionStore | FileSystem.FileSystem | Scope.Scope> =>
  settings.persist
    ? Effect.andThen(
      Effect.addFinalizer(() => recordWorkspace(settings.workspace, settings.sessionKey)),
      writeLastSession(settings.dataDir, settings.workspace, settings.sessionKey)
    )
    : Effect.void
