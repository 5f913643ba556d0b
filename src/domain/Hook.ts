/**
 * Hooks: values with optional handlers, one per point of the turn (DESIGN §6).
 *
 * Each handler's return type is exactly what its point may do: returning `Hook.deny(...)` from
 * `afterTool` is a type error. A handler may return its decision directly, `undefined` (continue),
 * or an `Effect` of either; a failure, defect or timeout counts as "continue" (approval: "deny").
 *
 * @example
 * ```ts
 * import { Hook } from "effect-agent-loop"
 *
 * const noRm = Hook.make({
 *   beforeTool: ({ call }) =>
 *     call.name === "exec" && JSON.stringify(call.arguments).includes("rm -rf")
 *       ? Hook.deny("destructive command")
 *       : Hook.continue
 * })
 * ```
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { AgentEvent } from "./Event.ts"
import type { AssistantMessage, Content, Message, ToolCall } from "./Message.ts"
import type { FinishReason, ProviderRequest, ToolDefinition } from "./Provider.ts"
import type { McpOrigin, Tool } from "./Tool.ts"
import type { TurnResult } from "./Turn.ts"

/** Go on unchanged. */
export interface Continue { readonly _tag: "Continue" }
/** Stop this point (`beforeTurn`: status `blocked`; `beforeStop`: feedback to the model; sub-turns, sessions). */
export interface Block { readonly _tag: "Block"; readonly reason: string }
/** End the turn with status `failed`. */
export interface AbortTurn { readonly _tag: "AbortTurn"; readonly reason: string }
/** End the turn as `interruptHard` would: roll back, status `aborted`. */
export interface HardAbort { readonly _tag: "HardAbort"; readonly reason: string }
/** Do not run this tool call; `reason` is what the model sees. */
export interface Deny { readonly _tag: "Deny"; readonly reason: string }
/** Approve a tool call that requires approval. */
export interface Approve { readonly _tag: "Approve" }
/** Change something; the fields depend on the point. */
export type Modify<A> = { readonly _tag: "Modify" } & A
/** Patch a tool result; patches of several hooks accumulate. */
export interface Patch { readonly _tag: "Patch"; readonly content?: string; readonly isError?: boolean }

/** `Continue`. */
export const continue_: Continue = { _tag: "Continue" }
export { continue_ as continue }
/** `Approve`. */
export const approve: Approve = { _tag: "Approve" }
/** A `Block` with a reason (or feedback for `beforeStop`). */
export const block = (reason: string): Block => ({ _tag: "Block", reason })
/** An `AbortTurn` with a reason. */
export const abortTurn = (reason: string): AbortTurn => ({ _tag: "AbortTurn", reason })
/** A `HardAbort` with a reason. */
export const hardAbort = (reason: string): HardAbort => ({ _tag: "HardAbort", reason })
/** A `Deny` with a reason. */
export const deny = (reason: string): Deny => ({ _tag: "Deny", reason })
/** A `Modify` carrying the changes of its point. */
export const modify = <const A extends object>(changes: A): Modify<A> => ({ _tag: "Modify", ...changes })
/** A `Patch` of a tool result. */
export const patch = (changes: { readonly content?: string; readonly isError?: boolean }): Patch => ({ _tag: "Patch", ...changes })

/** Where a handler runs. */
export interface HookContext {
  readonly turnId: string
  readonly sessionKey: string
  readonly iteration: number
  readonly depth: number
  readonly parentTurnId?: string
}

/** Where session-level handlers (`sessionStart`, `sessionEnd`) run: outside any turn. */
export const sessionContext = (sessionKey: string): HookContext => ({ turnId: "", sessionKey, iteration: 0, depth: 0 })

/** A tool call as hooks see it: arguments already parsed from JSON. */
export interface HookToolCall {
  readonly id: string
  readonly name: string
  /** For an MCP tool, its server and its name there, whatever `name` it is registered under. */
  readonly mcp?: McpOrigin
  readonly arguments: unknown
  readonly readOnly: boolean
  readonly requiresApproval: boolean
}

/** What a handler returns: its decision, nothing (continue), or an Effect of either. */
export type HookReturn<D> = D | void | Effect.Effect<D | void, unknown>

/** Changes `beforeTurn` may make. */
export interface TurnChanges { readonly addMessages?: ReadonlyArray<Message>; readonly systemPrompt?: string }
/** Changes `beforeLLMRequest` may make, for this call only. */
export interface RequestChanges {
  readonly messages?: ReadonlyArray<Message>
  readonly model?: string
  readonly tools?: ReadonlyArray<ToolDefinition>
}
/** Changes `afterLLMResponse` may make. */
export interface ResponseChanges { readonly content?: string; readonly toolCalls?: ReadonlyArray<ToolCall> }

/** A response as `afterLLMResponse` sees it. */
export interface HookResponse {
  readonly content: string
  readonly toolCalls: ReadonlyArray<ToolCall>
  readonly finishReason: FinishReason
}

/** Sub-turn settings as `beforeSubTurn` sees them. */
export interface HookSubTurn {
  readonly childTurnId: string
  readonly model: string
  readonly prompt: string
  readonly async: boolean
  readonly critical: boolean
}

/** The handlers a hook may implement; each is optional. */
export interface Hook {
  /** Every event, as a bus subscriber of its own: it observes and never slows a turn. */
  readonly onEvent?: (event: AgentEvent) => HookReturn<never>
  /** Before a session's first turn in this loop; a block makes that turn `blocked`. */
  readonly sessionStart?: (input: { readonly sessionKey: string }) => HookReturn<Continue | Block>
  /** When the session has been idle for `sessionIdleTimeout`, or the loop closes. */
  readonly sessionEnd?: (input: { readonly sessionKey: string }) => HookReturn<never>
  /** Before the input is processed: block it (`blocked`), add messages, or set the system prompt. */
  readonly beforeTurn?: (input: {
    readonly context: HookContext
    readonly input: Content
    readonly messages: ReadonlyArray<Message>
    readonly systemPrompt: string | undefined
  }) => HookReturn<Continue | Block | Modify<TurnChanges>>
  /** Before each model call: rewrite the request for this call (messages, model, tools), or stop the turn. */
  readonly beforeLLMRequest?: (input: {
    readonly context: HookContext
    readonly request: ProviderRequest
  }) => HookReturn<Continue | Modify<RequestChanges> | AbortTurn | HardAbort>
  /** After each reply: rewrite its text or tool calls, or stop the turn. */
  readonly afterLLMResponse?: (input: {
    readonly context: HookContext
    readonly response: HookResponse
  }) => HookReturn<Continue | Modify<ResponseChanges> | AbortTurn>
  /** Before each tool call: change its arguments, deny it (the model sees the reason), or stop the turn. */
  readonly beforeTool?: (input: {
    readonly context: HookContext
    readonly call: HookToolCall
  }) => HookReturn<Continue | Modify<{ readonly arguments: unknown }> | Deny | AbortTurn | HardAbort>
  /** Before a call that requires approval: any deny denies; when every approver abstains, the call is denied unless `autoApprove`. */
  readonly approveTool?: (input: {
    readonly context: HookContext
    readonly call: HookToolCall
  }) => HookReturn<Approve | Deny>
  /** After a tool call succeeded: patch its result (patches accumulate). */
  readonly afterTool?: (input: {
    readonly context: HookContext
    readonly call: HookToolCall
    readonly result: { readonly content: Content; readonly isError: boolean }
  }) => HookReturn<Continue | Patch>
  /** After a tool call failed while running: patch its result (patches accumulate). */
  readonly onToolFailure?: (input: {
    readonly context: HookContext
    readonly call: HookToolCall
    readonly result: { readonly content: Content; readonly isError: boolean }
  }) => HookReturn<Continue | Patch>
  /** When a final answer would end the turn: a block sends its feedback to the model and the turn goes on (at most `maxStopBlocks` times in a row). */
  readonly beforeStop?: (input: {
    readonly context: HookContext
    readonly finalMessage: AssistantMessage
    readonly stopHookActive: boolean
  }) => HookReturn<Continue | Block>
  /** Before compression or a summary: refuse it. */
  readonly beforeCompact?: (input: {
    readonly context: HookContext
    readonly reason: "overflow" | "budget" | "summary"
    readonly messages: ReadonlyArray<Message>
  }) => HookReturn<Continue | AbortTurn>
  /** After compression or a summary. */
  readonly afterCompact?: (input: {
    readonly context: HookContext
    readonly reason: "overflow" | "budget" | "summary"
    readonly dropped: number
    readonly remaining: number
  }) => HookReturn<never>
  /** Before a sub-turn starts: refuse it. */
  readonly beforeSubTurn?: (input: {
    readonly context: HookContext
    readonly subTurn: HookSubTurn
  }) => HookReturn<Continue | Block>
  /** After a sub-turn ended, with its result. */
  readonly afterSubTurn?: (input: {
    readonly context: HookContext
    readonly subTurn: HookSubTurn
    readonly result: TurnResult
  }) => HookReturn<never>
  /** After `TurnEnd`, with the turn's result. */
  readonly afterTurn?: (input: { readonly context: HookContext; readonly result: TurnResult }) => HookReturn<never>
}

/** A hook point: the name of one handler of `Hook`. */
export type Point = keyof Hook

/** What a handler of point `K` receives. */
export type InputOf<K extends Point> = Parameters<NonNullable<Hook[K]>>[0]

/** What a handler of point `K` may decide (returning nothing means `Continue`). */
export type DecisionOf<K extends Point> = Exclude<ReturnType<NonNullable<Hook[K]>>, void | Effect.Effect<unknown, unknown, unknown>>

/** The decisions of point `K` that end it (block, deny, abort): the first one wins. */
export type StopOf<K extends Point> = Exclude<DecisionOf<K>, Continue | Approve | Patch | { readonly _tag: "Modify" }>

/** The decisions of point `K` that change what later handlers see (`Modify`, `Patch`). */
export type ChangeOf<K extends Point> = Extract<DecisionOf<K>, Patch | { readonly _tag: "Modify" }>

/**
 * The most characters of text a hook can put into a turn in the loop's name: block and deny
 * reasons (file hooks' stderr among them), stop feedback, abort reasons, messages added by
 * `beforeTurn`, patched tool results, and the messages of hook failures. A longer text is cut to
 * this length, its end replaced by a marker saying how much was cut (see `limitText`).
 */
export const TEXT_LIMIT = 64 * 1024

const cutMarker = (cut: number, total: number) => `\n[hook text cut: ${cut} of ${total} characters removed]`

/** `text` unchanged if it has at most `limit` characters, else cut to `limit` characters ending with a marker. */
export const limitText = (text: string, limit: number = TEXT_LIMIT): string => {
  if (text.length <= limit) return text
  // The marker for the whole length is at least as long as the one finally used; a second pass
  // keeps what a shorter marker leaves room for.
  const first = Math.max(0, limit - cutMarker(text.length, text.length).length)
  let keep = Math.max(0, limit - cutMarker(text.length - first, text.length).length)
  // Never keep half of a surrogate pair.
  if (keep > 0 && /[\uD800-\uDBFF]/.test(text[keep - 1]!)) keep--
  return (text.slice(0, keep) + cutMarker(text.length - keep, text.length)).slice(0, limit)
}

/** Identity, for type inference and checking of a hook literal. */
export const make = (hook: Hook): Hook => hook

/** How a hook is registered. Higher `priority` runs first; ties by registration order. */
export interface RegisterOptions {
  readonly name?: string
  readonly priority?: number
  /** Where it came from, e.g. `"code"` or the path of a `HOOK.md`. */
  readonly source?: string
  /**
   * Time limit of each of this hook's handlers, instead of `hookTimeout` (`approvalTimeout` for
   * `approveTool`): a file hook brings its own, longer one.
   */
  readonly timeout?: Duration.Input
}

/** A tool call as a typed hook (`forTool`) sees it: the call, and its arguments as the tool's Schema decoded them. */
export interface TypedToolCall<A> {
  readonly context: HookContext
  readonly call: HookToolCall
  readonly args: A
}

/** The handlers of a hook on one tool (`forTool`), each given the tool's decoded arguments. */
export interface ToolHook<A> {
  /** Before a call of the tool: change its arguments (in their decoded type), deny it, or stop the turn. */
  readonly beforeTool?: (input: TypedToolCall<A>) => HookReturn<Continue | Modify<{ readonly arguments: A }> | Deny | AbortTurn | HardAbort>
  /** Before a call of the tool that requires approval. */
  readonly approveTool?: (input: TypedToolCall<A>) => HookReturn<Approve | Deny>
  /** After a call of the tool succeeded: patch its result. */
  readonly afterTool?: (
    input: TypedToolCall<A> & { readonly result: { readonly content: Content; readonly isError: boolean } }
  ) => HookReturn<Continue | Patch>
  /** After a call of the tool failed while running: patch its result. */
  readonly onToolFailure?: (
    input: TypedToolCall<A> & { readonly result: { readonly content: Content; readonly isError: boolean } }
  ) => HookReturn<Continue | Patch>
}

/**
 * A hook on one tool, whose handlers get the call's arguments decoded by the tool's Schema and
 * typed (`Tool.make`'s `parameters`), instead of the JSON `unknown` of a plain hook. It handles the
 * calls of that tool (by name) only. A call whose arguments the Schema rejects never reaches it:
 * the model is told of its mistake as without the hook. A `beforeTool` rewrite is given in the
 * decoded type and encoded back by the Schema for the tool; one the Schema rejects fails the call,
 * naming the hook (and an `Error` event tells its author).
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Hook, Tool } from "effect-agent-loop"
 *
 * const transfer = Tool.make({
 *   name: "transfer",
 *   description: "Moves money between accounts",
 *   parameters: Schema.Struct({ from: Schema.String, to: Schema.String, cents: Schema.Int }),
 *   execute: ({ cents }) => Effect.succeed(`moved ${cents}`)
 * })
 * const limit = Hook.forTool(transfer, {
 *   beforeTool: ({ args }) => args.cents > 100_000 ? Hook.deny("over the limit") : Hook.continue
 * })
 * ```
 */
export const forTool = <A>(tool: Tool<any, A>, handlers: ToolHook<A>): Hook => {
  // A call of another tool, or with arguments the Schema rejects, is not this hook's: it continues.
  const withArgs = <I extends { readonly call: HookToolCall }, D>(handler: (input: I & { readonly args: A }) => HookReturn<D>) =>
  (input: I): HookReturn<D> =>
    input.call.name !== tool.name ? undefined : Effect.flatMap(
      Effect.option(tool.decode(input.call.arguments)),
      (decoded) => decoded._tag === "None" ? Effect.void : asEffect(handler({ ...input, args: decoded.value as A }))
    )
  const before = handlers.beforeTool
  return {
    ...(before === undefined ? {} : {
      beforeTool: withArgs<InputOf<"beforeTool">, DecisionOf<"beforeTool">>((input) =>
        Effect.flatMap(asEffect(before(input)), encodeRewrite(tool)))
    }),
    ...(handlers.approveTool === undefined ? {} : {
      approveTool: withArgs<InputOf<"approveTool">, DecisionOf<"approveTool">>(handlers.approveTool)
    }),
    ...(handlers.afterTool === undefined ? {} : {
      afterTool: withArgs<InputOf<"afterTool">, DecisionOf<"afterTool">>(handlers.afterTool)
    }),
    ...(handlers.onToolFailure === undefined ? {} : {
      onToolFailure: withArgs<InputOf<"onToolFailure">, DecisionOf<"onToolFailure">>(handlers.onToolFailure)
    })
  }
}

const asEffect = <D>(returned: HookReturn<D>): Effect.Effect<D | void, unknown> =>
  Effect.isEffect(returned) ? returned : Effect.succeed(returned)

/**
 * A typed rewrite encoded back to the JSON form the tool decodes. One the Schema rejects goes on
 * as it is: the loop's decoding then rejects it too, and names this hook.
 */
const encodeRewrite = (tool: Tool<any, any>) => <D>(decision: D | void): Effect.Effect<D | void> => {
  const d = decision as { readonly _tag?: string; readonly arguments?: unknown } | undefined
  if (d?._tag !== "Modify" || tool.encode === undefined) return Effect.succeed(decision)
  return Effect.match(tool.encode(d.arguments), {
    onFailure: () => decision,
    onSuccess: (encoded) => ({ ...d, arguments: encoded }) as D
  })
}
