/**
 * `Hooks`: the registry of hooks and the runner of each hook point (DESIGN §6).
 *
 * The loop calls one method per point and gets the combined outcome of every handler:
 * transforms chained in priority order, the first deny/abort/block winning, patches accumulated.
 * Every method here never fails: a handler that fails, dies or times out counts as "continue"
 * (approval: "deny") and is reported as an `Error` event. `onEvent` observers are not called by
 * the loop: each one is a bus subscriber of its own, so a stalled observer loses its own events
 * and never slows a turn.
 */
import { Context, Effect, Scope } from "effect"
import type {
  AbortTurn,
  Approve,
  Block,
  Continue,
  Deny,
  HardAbort,
  Hook,
  HookContext,
  HookResponse,
  HookSubTurn,
  HookToolCall,
  RegisterOptions
} from "../domain/Hook.ts"
import type { AssistantMessage, Message } from "../domain/Message.ts"
import type { ProviderRequest } from "../domain/Provider.ts"
import type { TurnResult } from "../domain/Turn.ts"

/** A stopping decision with the name of the hook that made it, for the `Error` event. */
export type Named<D> = D & { readonly hook: string }

/** The combined outcome of `beforeTurn`. */
export type BeforeTurnOutcome =
  | { readonly _tag: "Continue"; readonly addMessages: ReadonlyArray<Message>; readonly systemPrompt: string | undefined }
  | Named<Block>
/** The combined outcome of `beforeLLMRequest`: the request to send, or an abort. */
export type RequestOutcome =
  | { readonly _tag: "Continue"; readonly request: ProviderRequest }
  | Named<AbortTurn>
  | Named<HardAbort>
/** The combined outcome of `afterLLMResponse`. */
export type ResponseOutcome = { readonly _tag: "Continue"; readonly response: HookResponse } | Named<AbortTurn>
/** The combined outcome of `beforeTool`: the arguments to run with, or a denial/abort. */
export type BeforeToolOutcome =
  | { readonly _tag: "Continue"; readonly arguments: unknown }
  | Named<Deny>
  | Named<AbortTurn>
  | Named<HardAbort>
/** A tool result after `afterTool`/`onToolFailure` patches. */
export interface ToolResultOutcome { readonly content: string; readonly isError: boolean }

/** A registered hook, as `hooks list` shows it. */
export interface HookInfo {
  readonly name: string
  readonly priority: number
  readonly source: string
  readonly handlers: ReadonlyArray<keyof Hook>
}

/** The hook registry and runner. */
export interface HooksShape {
  /** Registers a hook for the life of the scope. */
  readonly register: (hook: Hook, options?: RegisterOptions) => Effect.Effect<void, never, Scope.Scope>
  /** The registered hooks, in run order. */
  readonly list: Effect.Effect<ReadonlyArray<HookInfo>>
  readonly sessionStart: (input: { readonly sessionKey: string }) => Effect.Effect<Continue | Named<Block>>
  readonly sessionEnd: (input: { readonly sessionKey: string }) => Effect.Effect<void>
  readonly beforeTurn: (input: {
    readonly context: HookContext
    readonly input: string
    readonly messages: ReadonlyArray<Message>
    readonly systemPrompt: string | undefined
  }) => Effect.Effect<BeforeTurnOutcome>
  readonly beforeLLMRequest: (input: {
    readonly context: HookContext
    readonly request: ProviderRequest
  }) => Effect.Effect<RequestOutcome>
  readonly afterLLMResponse: (input: {
    readonly context: HookContext
    readonly response: HookResponse
  }) => Effect.Effect<ResponseOutcome>
  readonly beforeTool: (input: { readonly context: HookContext; readonly call: HookToolCall }) => Effect.Effect<BeforeToolOutcome>
  /** Only for tools that require approval; no approver means deny unless `autoApprove`; timeout denies. */
  readonly approveTool: (input: { readonly context: HookContext; readonly call: HookToolCall }) => Effect.Effect<Approve | Named<Deny>>
  /** `afterTool` when `failed` is false, else `onToolFailure`. */
  readonly afterTool: (input: {
    readonly context: HookContext
    readonly call: HookToolCall
    readonly result: ToolResultOutcome
    readonly failed: boolean
  }) => Effect.Effect<ToolResultOutcome>
  readonly beforeStop: (input: {
    readonly context: HookContext
    readonly finalMessage: AssistantMessage
    readonly stopHookActive: boolean
  }) => Effect.Effect<Continue | Named<Block>>
  readonly beforeCompact: (input: {
    readonly context: HookContext
    readonly reason: "overflow" | "budget" | "summary"
    readonly messages: ReadonlyArray<Message>
  }) => Effect.Effect<Continue | Named<AbortTurn>>
  readonly afterCompact: (input: {
    readonly context: HookContext
    readonly reason: "overflow" | "budget" | "summary"
    readonly dropped: number
    readonly remaining: number
  }) => Effect.Effect<void>
  readonly beforeSubTurn: (input: { readonly context: HookContext; readonly subTurn: HookSubTurn }) => Effect.Effect<Continue | Named<Block>>
  readonly afterSubTurn: (input: {
    readonly context: HookContext
    readonly subTurn: HookSubTurn
    readonly result: TurnResult
  }) => Effect.Effect<void>
  readonly afterTurn: (input: { readonly context: HookContext; readonly result: TurnResult }) => Effect.Effect<void>
}

/** The hooks service. Layers: `HooksLive` (the registry), `FileHooks` (scripts on disk). */
export class Hooks extends Context.Service<Hooks, HooksShape>()("effect-agent-loop/Hooks") {}
