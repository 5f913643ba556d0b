/**
 * The hook points (DESIGN §6) as data: for each handler of `Hook`, which of its decisions end the
 * point and how its changes carry over to the handlers after it. The runner (`layers/Hooks.ts`)
 * is generic over this table and the loop runs every point through `HooksShape.run` (but
 * `approveTool`, which is fail-closed), so adding a point means three things: its handler type in
 * `Hook` (input and decisions), its row here, and a `hooks.run(point, input)` where the loop
 * reaches it. (File hooks name the points they support in `FileHooks.ts`.)
 *
 * Also here: what every decision's text goes through before it reaches the turn (`cleanDecision`).
 */
import * as Hook from "../../domain/Hook.ts"
import { type Content, mapStrings, type Message } from "../../domain/Message.ts"

/** How the handlers of point `K` combine. */
export interface PointRule<K extends Hook.Point> {
  /** Decisions that end the point, the first one winning; any other decision is ignored. */
  readonly stopOn: ReadonlyArray<Hook.StopOf<K>["_tag"]>
  /** How a change (`Modify`, `Patch`) alters the input the next handlers and the outcome see. */
  readonly apply?: (input: Hook.InputOf<K>, change: Hook.ChangeOf<K>) => Hook.InputOf<K>
}

/** Every point, in the order `hooks list` shows a hook's handlers. */
export const points = {
  // Run for each event by a bus subscriber of its own, not by the runner.
  onEvent: { stopOn: [] },
  sessionStart: { stopOn: ["Block"] },
  beforeTurn: {
    stopOn: ["Block"],
    apply: (input, change) => ({
      ...input,
      messages: change.addMessages === undefined ? input.messages : [...input.messages, ...change.addMessages],
      systemPrompt: change.systemPrompt ?? input.systemPrompt
    })
  },
  beforeLLMRequest: {
    stopOn: ["AbortTurn", "HardAbort"],
    apply: (input, change) => ({
      ...input,
      request: {
        ...input.request,
        ...(change.messages !== undefined ? { messages: change.messages } : {}),
        ...(change.model !== undefined ? { model: change.model } : {}),
        ...(change.tools !== undefined ? { tools: change.tools } : {})
      }
    })
  },
  afterLLMResponse: {
    stopOn: ["AbortTurn"],
    apply: (input, change) => ({
      ...input,
      response: {
        ...input.response,
        ...(change.content !== undefined ? { content: change.content } : {}),
        ...(change.toolCalls !== undefined ? { toolCalls: change.toolCalls } : {})
      }
    })
  },
  beforeTool: {
    stopOn: ["Deny", "AbortTurn", "HardAbort"],
    apply: (input, change) => ({ ...input, call: { ...input.call, arguments: change.arguments } })
  },
  // Fail-closed and "any deny denies": run by the runner's `approveTool`, not by `run`.
  approveTool: { stopOn: ["Deny"] },
  afterTool: { stopOn: [], apply: (input, patch) => ({ ...input, result: patched(input.result, patch) }) },
  onToolFailure: { stopOn: [], apply: (input, patch) => ({ ...input, result: patched(input.result, patch) }) },
  beforeStop: { stopOn: ["Block"] },
  beforeCompact: { stopOn: ["AbortTurn"] },
  afterCompact: { stopOn: [] },
  beforeSubTurn: { stopOn: ["Block"] },
  afterSubTurn: { stopOn: [] },
  afterTurn: { stopOn: [] },
  sessionEnd: { stopOn: [] }
} satisfies { readonly [K in Hook.Point]: PointRule<K> }

/** The point names, in table order. */
export const pointNames = Object.keys(points) as ReadonlyArray<Hook.Point>

function patched(
  result: { readonly content: Content; readonly isError: boolean },
  patch: Hook.Patch
): { readonly content: Content; readonly isError: boolean } {
  return { content: patch.content ?? result.content, isError: patch.isError ?? result.isError }
}

/** What a hook's text goes through: secrets out, then (for what it says in the loop's name) the length cut. */
export interface TextRules {
  /** Scrubbed and cut to `Hook.TEXT_LIMIT`: reasons, feedback, added messages, patched results. */
  readonly said: (text: string) => string
  /** Scrubbed only: a system prompt or a response content the hook substitutes. */
  readonly substituted: (text: string) => string
}

const saidMessage = (rules: TextRules) => (message: Message): Message =>
  message.role === "user" || message.role === "tool"
    ? { ...message, content: mapStrings(message.content, rules.said) }
    : { ...message, content: rules.said(message.content) }

/**
 * A decision with its texts made safe: stopping decisions' reasons and patched contents are said
 * by the hook; of a `Modify`, added messages are said, a system prompt or content substituted.
 */
export const cleanDecision = <D extends { readonly _tag: string }>(decision: D, rules: TextRules): D => {
  const d = decision as D & {
    readonly reason?: unknown
    readonly content?: unknown
    readonly addMessages?: ReadonlyArray<Message>
    readonly systemPrompt?: unknown
  }
  switch (d._tag) {
    case "Block":
    case "Deny":
    case "AbortTurn":
    case "HardAbort":
      return typeof d.reason === "string" ? { ...d, reason: rules.said(d.reason) } : d
    case "Patch":
      return typeof d.content === "string" ? { ...d, content: rules.said(d.content) } : d
    case "Modify":
      return {
        ...d,
        ...(d.addMessages !== undefined ? { addMessages: d.addMessages.map(saidMessage(rules)) } : {}),
        ...(typeof d.systemPrompt === "string" ? { systemPrompt: rules.substituted(d.systemPrompt) } : {}),
        ...(typeof d.content === "string" ? { content: rules.substituted(d.content) } : {})
      }
    default:
      return d
  }
}
