/**
 * Where a plan made in plan mode is asked about: the loop's layer builds `exit_plan_mode` before a
 * command knows how it will ask (the chat's line input comes later), so the tool asks through a
 * slot that the command fills once it can (`output/planReview.ts` has the questions).
 */
import * as Effect from "effect/Effect"
import type { PlanReviewer } from "../../tools/exitPlanMode.ts"

/** Where the reviewer is set once the command can ask; until then (and unset) every plan ends its turn. */
export interface Slot {
  readonly review: PlanReviewer
  readonly set: (reviewer: PlanReviewer) => void
}

/** An empty slot. */
export const slot = (): Slot => {
  let reviewer: PlanReviewer | undefined
  return {
    review: (request) => reviewer === undefined ? Effect.succeed({ _tag: "End" }) : reviewer(request),
    set: (next) => {
      reviewer = next
    }
  }
}

/**
 * The chat's slot: the loop's layer is built before the chat's line input exists, so the layer
 * takes this one (`App.layer` without a `planReview` of its own) and the chat fills it.
 */
export const forChat: Slot = slot()
