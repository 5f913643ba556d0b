/**
 * Plan mode's question (`exit_plan_mode`, `tools/exitPlanMode.ts`): the plan the model made,
 * rendered as Markdown, and the user's answer. At a terminal (`chat`): `y` accepts and the turn
 * goes on with edits accepted (acceptEdits), `d` accepts in default mode, `n` (or `n WHAT TO
 * CHANGE`, or anything else typed) keeps planning, the words going back to the model. Without a
 * terminal (`run`): the plan is printed and the turn ends there, unless `--yes` accepts it.
 *
 * The tool is built with the loop's layer, before a command knows how it will ask: it asks through
 * a slot (`runtime/planSlot.ts`), which the command fills with one of these once it can.
 */
import * as Effect from "effect/Effect"
import type { PlanDecision, PlanRequest, PlanReviewer } from "../../tools/exitPlanMode.ts"
import type { ScreenShape } from "../terminal/screen.ts"
import { makeMarkdown } from "./markdown.ts"
import { markdownStyle } from "./markdownInline.ts"

/** The plan on stdout: rendered as Markdown where answers are, else as written (cleaned on a terminal). */
export const showPlan = (screen: ScreenShape, plan: string) =>
  Effect.gen(function*() {
    const text = plan.endsWith("\n") ? plan : `${plan}\n`
    if (!screen.markdown) return yield* screen.text(text)
    const markdown = makeMarkdown(markdownStyle(screen.out), screen.size)
    yield* screen.styled(markdown.push(text) + markdown.end())
  })

/** What the answer typed at the plan's question means. */
export const parseAnswer = (answer: string | undefined): PlanDecision => {
  const text = (answer ?? "").trim()
  if (/^(y|yes)$/i.test(text)) return { _tag: "Accept", mode: "acceptEdits" }
  if (/^d$/i.test(text)) return { _tag: "Accept", mode: "default" }
  const feedback = /^(n|no)\b\s*(.*)$/is.exec(text)
  return { _tag: "Refine", feedback: feedback === null ? text : feedback[2]! }
}

/**
 * The question at a terminal: the plan, the choices, the answer. `accepted` is told the mode the
 * user chose (the chat's mode from then on).
 */
export const atTerminal = (
  screen: ScreenShape,
  ask: Effect.Effect<string | undefined>,
  accepted: (mode: "default" | "acceptEdits") => Effect.Effect<void>
): PlanReviewer =>
(request: PlanRequest) =>
  Effect.gen(function*() {
    const err = screen.err
    yield* screen.line(`${err.cyan("◆")} ${err.bold("Plan")} ${err.dim("(plan mode: the model has only read so far)")}`)
    yield* showPlan(screen, request.plan)
    yield* screen.line(`  ${err.dim("y: yes, and accept edits · d: yes, default mode · n: keep planning (n WHAT TO CHANGE tells the model)")}`)
    yield* screen.prompt(`${err.yellow("?")} ${err.bold("accept this plan?")} [y/d/N] `)
    const decision = parseAnswer(yield* ask)
    if (decision._tag === "Accept") {
      yield* accepted(decision.mode ?? "default")
      yield* screen.line(err.dim(`(plan accepted: ${decision.mode === "acceptEdits" ? "accept edits" : "default"} mode)`))
    } else {
      yield* screen.line(err.dim("(keep planning)"))
    }
    return decision
  })

/**
 * `run`'s: the plan is printed (on stdout with text output; the JSON result carries it otherwise);
 * under `--yes` it is accepted and the turn goes on, else the turn ends with it.
 */
export const printed = (screen: ScreenShape, accept: boolean, onStdout: boolean): PlanReviewer => (request: PlanRequest) =>
  Effect.gen(function*() {
    if (onStdout) yield* showPlan(screen, request.plan)
    if (!accept) {
      yield* screen.line(screen.err.dim(`(plan mode: the turn ends with the plan; run again with --yes to accept it, or without --permission-mode plan)`))
      return { _tag: "End" } as const
    }
    yield* screen.line(screen.err.dim("(plan accepted by --yes)"))
    return { _tag: "Accept", mode: "default" } as const
  })
