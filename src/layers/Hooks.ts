/**
 * The in-process `Hooks` registry and runner (DESIGN §6).
 *
 * Hooks are kept sorted by priority (higher first), ties in registration order. Each runner
 * method takes a snapshot of that list, runs the handlers of its point one after the other and
 * combines their decisions. Every handler runs under a time limit on the Clock; a failure, defect
 * or timeout counts as "continue" (approval: "deny") and publishes an `Error` event naming the
 * handler (`stage`) and the hook (`hook`).
 *
 * `onEvent` observers are not run here: each one gets a bus subscription of its own and a
 * consumer fiber in its registration scope, so it sees every event yet never slows a turn.
 */
import { Cause, Clock, Duration, Effect, Exit, Layer, Option, Result } from "effect"
import * as AgentEvent from "../domain/Event.ts"
import * as Hook from "../domain/Hook.ts"
import type { Message } from "../domain/Message.ts"
import { EventBus, type EventBusShape } from "../services/EventBus.ts"
import { Hooks, type HookInfo, type HooksShape, type Named } from "../services/Hooks.ts"
import { LoopConfig } from "../services/LoopConfig.ts"

/** Every handler a hook may have, in the order `list` reports them. */
const handlerNames: ReadonlyArray<keyof Hook.Hook> = [
  "onEvent",
  "sessionStart",
  "beforeTurn",
  "beforeLLMRequest",
  "afterLLMResponse",
  "beforeTool",
  "approveTool",
  "afterTool",
  "onToolFailure",
  "beforeStop",
  "beforeCompact",
  "afterCompact",
  "beforeSubTurn",
  "afterSubTurn",
  "afterTurn",
  "sessionEnd"
]

interface Entry {
  readonly hook: Hook.Hook
  readonly name: string
  readonly priority: number
  readonly source: string
  readonly seq: number
  readonly timeout: Duration.Duration | undefined
}

/** What one handler did: its decision (`undefined` = continue), or why it counts as not having decided. */
type Outcome<D> =
  | { readonly _tag: "Done"; readonly decision: D | undefined }
  | { readonly _tag: "Failed"; readonly message: string }

const show = (u: unknown): string => {
  if (u instanceof Error) return u.message.length > 0 ? u.message : u.name
  if (typeof u === "string") return u
  try {
    return JSON.stringify(u) ?? String(u)
  } catch {
    return String(u)
  }
}

const describeCause = (point: string, cause: Cause.Cause<unknown>): string => {
  const error = Cause.findErrorOption(cause)
  if (Option.isSome(error)) return `${point} failed: ${show(error.value)}`
  const defect = Cause.findDefect(cause)
  if (Result.isSuccess(defect)) return `${point} died: ${show(defect.success)}`
  return `${point} was interrupted`
}

/**
 * Runs one handler under `timeout`: a plain value, `undefined` or an Effect of either; a throw
 * becomes a defect. Never fails.
 */
const runHandler = <D>(
  point: string,
  timeout: Duration.Duration,
  call: () => Hook.HookReturn<D>
): Effect.Effect<Outcome<D>> =>
  Effect.suspend(() => {
    const returned = call()
    return Effect.isEffect(returned)
      ? (returned as Effect.Effect<D | void, unknown>)
      : Effect.succeed(returned as D | void)
  }).pipe(
    Effect.timeoutOption(timeout),
    Effect.exit,
    Effect.map((exit): Outcome<D> => {
      if (Exit.isFailure(exit)) return { _tag: "Failed", message: describeCause(point, exit.cause) }
      return Option.isSome(exit.value)
        ? { _tag: "Done", decision: exit.value.value as D | undefined }
        : { _tag: "Failed", message: `${point} timed out after ${Duration.toMillis(timeout)}ms` }
    })
  )


const publishError = (
  bus: EventBusShape,
  context: Hook.HookContext,
  stage: string,
  hook: string,
  message: string
): Effect.Effect<void> =>
  Effect.flatMap(Clock.currentTimeMillis, (at) => bus.publish(AgentEvent.make("Error", context, at, { stage, message, hook })))

const isOnEventError = (event: AgentEvent.AgentEvent): boolean => event._tag === "Error" && event.stage === "onEvent"

/** Builds the registry and runner from the loop's config and bus. */
export const make: Effect.Effect<HooksShape, never, LoopConfig | EventBus> = Effect.gen(function*() {
  const config = yield* LoopConfig
  const bus = yield* EventBus
  let entries: ReadonlyArray<Entry> = []
  let registered = 0

  const withHandler = (point: keyof Hook.Hook) => Effect.sync(() => entries.filter((e) => e.hook[point] !== undefined))

  /** Runs one entry's handler; a failure is published and counts as no decision. */
  const runEntry = <D>(
    entry: Entry,
    point: keyof Hook.Hook,
    context: Hook.HookContext,
    timeout: Duration.Duration,
    call: () => Hook.HookReturn<D>
  ): Effect.Effect<Outcome<D>> =>
    Effect.tap(runHandler(point, timeout, call), (outcome) =>
      outcome._tag === "Failed" ? publishError(bus, context, point, entry.name, outcome.message) : Effect.void)

  /**
   * Runs the handlers of `point` in order. `step` sees each decision (not "continue") and says
   * whether it ends the point; the decision that ended it is returned, named after its hook.
   */
  const fold = <D extends { readonly _tag: string }>(
    point: Exclude<keyof Hook.Hook, "onEvent" | "approveTool">,
    context: Hook.HookContext,
    call: (hook: Hook.Hook) => Hook.HookReturn<D>,
    step: (decision: Exclude<D, Hook.Continue>) => boolean = () => false
  ): Effect.Effect<Named<Exclude<D, Hook.Continue>> | undefined> =>
    Effect.gen(function*() {
      for (const entry of yield* withHandler(point)) {
        const outcome = yield* runEntry(entry, point, context, entry.timeout ?? config.hookTimeout, () => call(entry.hook))
        const decision = outcome._tag === "Done" ? outcome.decision : undefined
        if (decision !== undefined && decision._tag !== "Continue") {
          const stop = decision as Exclude<D, Hook.Continue>
          if (step(stop)) return { ...stop, hook: entry.name }
        }
      }
      return undefined
    })

  const stopOn = (...tags: ReadonlyArray<string>) => (decision: { readonly _tag: string }) => tags.includes(decision._tag)

  const observe = (entry: Entry, handler: NonNullable<Hook.Hook["onEvent"]>) => (event: AgentEvent.AgentEvent) =>
    Effect.flatMap(runHandler("onEvent", entry.timeout ?? config.hookTimeout, () => handler(event)), (outcome) => {
      if (outcome._tag === "Done") return Effect.void
      // An observer failing on another observer's error report would feed itself forever: log it instead.
      return isOnEventError(event)
        ? Effect.logWarning(`hook ${entry.name}: ${outcome.message}`)
        : publishError(bus, event, "onEvent", entry.name, outcome.message)
    })

  const register: HooksShape["register"] = (hook, options = {}) =>
    Effect.gen(function*() {
      const seq = ++registered
      const entry: Entry = {
        hook,
        name: options.name ?? `hook-${seq}`,
        priority: options.priority ?? 100,
        source: options.source ?? "code",
        seq,
        timeout: options.timeout === undefined ? undefined : Duration.fromInputUnsafe(options.timeout)
      }
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          entries = [...entries, entry].sort((a, b) => b.priority - a.priority || a.seq - b.seq)
        }),
        () => Effect.sync(() => {
          entries = entries.filter((e) => e !== entry)
        })
      )
      if (hook.onEvent !== undefined) {
        const sub = yield* bus.subscribe({ capacity: config.eventBufferCapacity, strategy: "dropping" })
        yield* Effect.forkScoped(Effect.forever(Effect.flatMap(sub.take, observe(entry, hook.onEvent))))
      }
    })

  const list = Effect.sync((): ReadonlyArray<HookInfo> =>
    entries.map((e) => ({
      name: e.name,
      priority: e.priority,
      source: e.source,
      handlers: handlerNames.filter((h) => e.hook[h] !== undefined)
    }))
  )

  const approveTool: HooksShape["approveTool"] = (input) =>
    Effect.gen(function*() {
      const approvers = yield* withHandler("approveTool")
      if (approvers.length === 0) {
        return config.autoApprove
          ? { _tag: "Approve" as const }
          : { _tag: "Deny" as const, reason: "no approver registered", hook: "" }
      }
      let approved = false
      for (const entry of approvers) {
        const outcome = yield* runEntry(entry, "approveTool", input.context, entry.timeout ?? config.approvalTimeout, () =>
          entry.hook.approveTool!(input))
        const decision = outcome._tag === "Failed"
          ? { _tag: "Deny" as const, reason: `approval by ${entry.name}: ${outcome.message}` }
          : outcome.decision
        // any deny denies, so nobody after it is asked (a prompt would ask the user for nothing)
        if (decision?._tag === "Deny") return { ...decision, hook: entry.name }
        if (decision?._tag === "Approve") approved = true
      }
      return approved || config.autoApprove
        ? { _tag: "Approve" as const }
        : { _tag: "Deny" as const, reason: "no approver decided", hook: "" }
    })

  const shape: HooksShape = {
    register,
    list,
    sessionStart: (input) =>
      Effect.map(
        fold("sessionStart", Hook.sessionContext(input.sessionKey), (h) => h.sessionStart!(input), stopOn("Block")),
        (d) => d ?? { _tag: "Continue" as const }
      ),
    sessionEnd: (input) => Effect.asVoid(fold("sessionEnd", Hook.sessionContext(input.sessionKey), (h) => h.sessionEnd!(input))),
    beforeTurn: (input) =>
      Effect.gen(function*() {
        const added: Array<Message> = []
        let systemPrompt = input.systemPrompt
        const blocked = yield* fold(
          "beforeTurn",
          input.context,
          (h) => h.beforeTurn!({ ...input, messages: [...input.messages, ...added], systemPrompt }),
          (d) => {
            if (d._tag !== "Modify") return true
            if (d.addMessages !== undefined) added.push(...d.addMessages)
            if (d.systemPrompt !== undefined) systemPrompt = d.systemPrompt
            return false
          }
        )
        return blocked?._tag === "Block" ? blocked : { _tag: "Continue" as const, addMessages: added, systemPrompt }
      }),
    beforeLLMRequest: (input) =>
      Effect.gen(function*() {
        let request = input.request
        const aborted = yield* fold("beforeLLMRequest", input.context, (h) => h.beforeLLMRequest!({ ...input, request }), (d) => {
          if (d._tag !== "Modify") return true
          request = {
            ...request,
            ...(d.messages !== undefined ? { messages: d.messages } : {}),
            ...(d.model !== undefined ? { model: d.model } : {}),
            ...(d.tools !== undefined ? { tools: d.tools } : {})
          }
          return false
        })
        return aborted !== undefined && aborted._tag !== "Modify"
          ? aborted
          : { _tag: "Continue" as const, request }
      }),
    afterLLMResponse: (input) =>
      Effect.gen(function*() {
        let response = input.response
        const aborted = yield* fold("afterLLMResponse", input.context, (h) => h.afterLLMResponse!({ ...input, response }), (d) => {
          if (d._tag !== "Modify") return true
          response = {
            ...response,
            ...(d.content !== undefined ? { content: d.content } : {}),
            ...(d.toolCalls !== undefined ? { toolCalls: d.toolCalls } : {})
          }
          return false
        })
        return aborted?._tag === "AbortTurn" ? aborted : { _tag: "Continue" as const, response }
      }),
    beforeTool: (input) =>
      Effect.gen(function*() {
        let call = input.call
        const stopped = yield* fold("beforeTool", input.context, (h) => h.beforeTool!({ ...input, call }), (d) => {
          if (d._tag !== "Modify") return true
          call = { ...call, arguments: d.arguments }
          return false
        })
        return stopped !== undefined && stopped._tag !== "Modify"
          ? stopped
          : { _tag: "Continue" as const, arguments: call.arguments }
      }),
    approveTool,
    afterTool: (input) =>
      Effect.gen(function*() {
        const point = input.failed ? "onToolFailure" : "afterTool"
        let result = input.result
        yield* fold(point, input.context, (h) => h[point]!({ context: input.context, call: input.call, result }), (d) => {
          if (d._tag === "Patch") {
            result = {
              content: d.content ?? result.content,
              isError: d.isError ?? result.isError
            }
          }
          return false
        })
        return result
      }),
    beforeStop: (input) =>
      Effect.map(fold("beforeStop", input.context, (h) => h.beforeStop!(input), stopOn("Block")), (d) =>
        d ?? { _tag: "Continue" as const }),
    beforeCompact: (input) =>
      Effect.map(fold("beforeCompact", input.context, (h) => h.beforeCompact!(input), stopOn("AbortTurn")), (d) =>
        d ?? { _tag: "Continue" as const }),
    afterCompact: (input) => Effect.asVoid(fold("afterCompact", input.context, (h) => h.afterCompact!(input))),
    beforeSubTurn: (input) =>
      Effect.map(fold("beforeSubTurn", input.context, (h) => h.beforeSubTurn!(input), stopOn("Block")), (d) =>
        d ?? { _tag: "Continue" as const }),
    afterSubTurn: (input) => Effect.asVoid(fold("afterSubTurn", input.context, (h) => h.afterSubTurn!(input))),
    afterTurn: (input) => Effect.asVoid(fold("afterTurn", input.context, (h) => h.afterTurn!(input)))
  }
  return shape
})

/** The registry and runner, configured by `LoopConfig` and reporting on the `EventBus`. */
export const layer: Layer.Layer<Hooks, never, LoopConfig | EventBus> = Layer.effect(Hooks, make)
