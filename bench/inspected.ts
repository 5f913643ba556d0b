/**
 * What the bench scripts that look inside one measured `bench:peers` turn share (`allocations.ts`,
 * `profile.ts`, `calls.ts`): the turn, after the same warm-up turn, run between two requests to
 * V8's inspector in this process, and a function's source as they print it.
 */
import * as Effect from "effect/Effect"
import { Session } from "node:inspector/promises"
import type * as Model from "./model.ts"
import * as Ours from "./ours.ts"
import type { Measurement, Workload } from "./workload.ts"

/** What to ask the inspector just before the measured turn, and what to read from it just after. */
export interface Probe<T> {
  readonly start: (session: Session) => Promise<unknown>
  readonly stop: (session: Session) => Promise<T>
}

/** Runs the warm-up turn, then the measured one inside `probe`; its measurement and what `stop` read. */
export const inspectTurn = async <T>(
  workload: Workload,
  warmUp: Workload,
  path: Model.Path,
  probe: Probe<T>
): Promise<{ readonly measurement: Measurement; readonly probed: T }> => {
  const session = new Session()
  session.connect()
  let probed: T | undefined
  const around = <A, E, R>(measured: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.acquireUseRelease(
      Effect.promise(() => probe.start(session)),
      () => measured,
      () => Effect.promise(async () => void (probed = await probe.stop(session)))
    )
  const measurement = await Ours.run(workload, warmUp, "stream", path, around)
  session.disconnect()
  return { measurement, probed: probed as T }
}

/** A script's URL as printed: from its package's folder under node_modules, or from src/ or bench/. */
export const shortUrl = (url: string): string => url.replace(/^.*\/node_modules\//, "").replace(/^.*\/(src|bench)\//, "$1/")
