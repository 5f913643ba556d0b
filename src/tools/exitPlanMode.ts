/**
 * `exit_plan_mode`: the end of plan mode (Claude Code's `ExitPlanMode`). A turn in plan mode
 * (`TurnOptions.planMode`) is offered only read-only tools and this one; the model calls it with
 * its plan, and the plan goes to the reviewer the tool was made with (the user, at a terminal or
 * in an editor). Accepted, the turn leaves plan mode and the model carries the plan out with every
 * tool; refused, the reviewer's words go back to the model as the result and it keeps planning.
 * With no reviewer (or one that says so), the plan is the turn's answer and the turn ends there.
 * The loop offers this tool only to a root turn in plan mode.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Tool from "../domain/Tool.ts"
import { CurrentTurn } from "../services/CurrentTurn.ts"

/** The tool's name. */
export const EXIT_PLAN_MODE = Tool.EXIT_PLAN_MODE

/** The arguments of `exit_plan_mode`. */
export const ExitPlanModeParameters = Schema.Struct({
  plan: Schema.String.annotate({ description: "The plan, in Markdown: the steps, the files to change and how, concisely" })
})

/** What the reviewer is shown: the plan and where it comes from. */
export interface PlanRequest {
  readonly plan: string
  readonly sessionKey: string
  readonly turnId: string
  readonly toolCallId: string
}

/**
 * The reviewer's answer: `Accept` (the turn goes on with every tool; `mode` is the permission mode
 * the user chose, for the host to keep), `Refine` (keep planning, with what to change), or `End`
 * (the plan is the turn's answer: nobody is there to accept it now).
 */
export type PlanDecision =
  | { readonly _tag: "Accept"; readonly mode?: "default" | "acceptEdits" }
  | { readonly _tag: "Refine"; readonly feedback?: string }
  | { readonly _tag: "End" }

/** Asks the user about a plan. */
export type PlanReviewer = (request: PlanRequest) => Effect.Effect<PlanDecision>

/** What the model is told when its plan is accepted. */
export const ACCEPTED = "The user approved the plan. Plan mode is over: carry the plan out now; every tool is available."

/** What the model is told when the user wants more planning. */
export const refined = (feedback: string | undefined) =>
  `The user did not approve the plan and wants to keep planning${feedback === undefined || feedback.trim() === "" ? "." : `: ${feedback.trim()}`}` +
  " Stay in plan mode (read-only tools only), revise the plan, and call exit_plan_mode again with the new plan."

/** What the model is told when the plan ends the turn. */
export const ENDED = "The plan was shown to the user; the turn ends here."

/** `exit_plan_mode`, asking `review` (none: every plan ends its turn). */
export const makeExitPlanMode = (review?: PlanReviewer) =>
  Tool.make({
    name: EXIT_PLAN_MODE,
    description: "Call this in plan mode when your plan is ready: it is shown to the user, who accepts it (then carry it out, " +
      "every tool becomes available) or asks you to keep planning. Only call it once you have read what you need; the plan " +
      "should say what you will change, where, and how you will check it.",
    parameters: ExitPlanModeParameters,
    // it changes nothing by itself: the user's answer does
    readOnly: true,
    execute: ({ plan }, context) =>
      Effect.gen(function*() {
        const turn = yield* CurrentTurn
        const mode = turn.planMode
        if (mode === undefined || !mode.active()) return { content: "Not in plan mode: there is no plan to approve; go on.", isError: true }
        const decision: PlanDecision = review === undefined
          ? { _tag: "End" }
          : yield* review({ plan, sessionKey: context.sessionKey, turnId: context.turnId, toolCallId: context.toolCallId })
        switch (decision._tag) {
          case "Accept":
            yield* mode.leave
            return ACCEPTED
          case "Refine":
            return refined(decision.feedback)
          case "End":
            yield* mode.endWith(plan)
            return ENDED
        }
      })
  })
