/**
 * What a failure says, for a person: one reading of a `Cause` shared by the loop, the hook runner
 * and the summariser, so every "it failed" message is worded from the same facts.
 */
import * as Cause from "effect/Cause"
import * as Option from "effect/Option"
import * as Result from "effect/Result"

/** A cause read for a message: its typed error, else its defect, else an interruption. */
export type CauseReading =
  | { readonly _tag: "Error"; readonly error: unknown }
  | { readonly _tag: "Defect"; readonly defect: unknown }
  | { readonly _tag: "Interrupted" }

/** The first typed error of `cause`, else its first defect, else an interruption. */
export const readCause = (cause: Cause.Cause<unknown>): CauseReading => {
  const error = Cause.findErrorOption(cause)
  if (Option.isSome(error)) return { _tag: "Error", error: error.value }
  const defect = Cause.findDefect(cause)
  return Result.isSuccess(defect) ? { _tag: "Defect", defect: defect.success } : { _tag: "Interrupted" }
}

/** Any thrown or failed value as text: an `Error`'s message (its name when empty), a string, else JSON. */
export const show = (u: unknown): string => {
  if (u instanceof Error) return u.message.length > 0 ? u.message : u.name
  if (typeof u === "string") return u
  try {
    return JSON.stringify(u) ?? String(u)
  } catch {
    return String(u)
  }
}

/** A tagged error as `Tag: message`; anything else as `show` says it. */
export const tagged = (u: unknown): string =>
  u instanceof Error && "_tag" in u ? `${String(u._tag)}: ${show(u)}` : show(u)
