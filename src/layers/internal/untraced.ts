/**
 * A service whose effects make no spans: the SQL store's statements would otherwise each be a
 * span (`effect/sql` makes one per statement, with the statement's text), most of them in traces of
 * their own since the store writes outside any turn (the journal, the session log after a turn).
 * Tracing stays on for everything around: only what runs inside the service's effects is quiet.
 */
import * as Effect from "effect/Effect"
import * as References from "effect/References"

const quiet = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, References.TracerEnabled, false)

/**
 * `service` with every effect it holds or returns run with tracing off: its methods (functions
 * returning effects), its effect values, and those of the plain objects it holds (`journal`,
 * `fencing`, `paused`), recursively.
 */
export const untraced = <S extends object>(service: S): S => {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(service)) {
    if (typeof value === "function") {
      out[key] = (...args: Array<unknown>) => {
        const result = (value as (...args: Array<unknown>) => unknown).apply(service, args)
        return Effect.isEffect(result) ? quiet(result) : result
      }
    } else if (Effect.isEffect(value)) {
      out[key] = quiet(value)
    } else if (typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype) {
      out[key] = untraced(value)
    } else {
      out[key] = value
    }
  }
  return out as S
}

/** `effect` with tracing off (the store's opening: its migrations). */
export const withoutSpans = quiet
