/**
 * The in-process `Hooks` registry and runner (DESIGN §6).
 *
 * Hooks are kept sorted by priority (higher first), ties in registration order, and for every
 * point the list of hooks handling it is rebuilt when a hook is registered or leaves: running a
 * point reads its list (a snapshot: registrations during a run apply to the next one), and a
 * point with an empty list returns at once. How each point combines its handlers is the table in
 * `internal/hookPoints.ts`.
 *
 * Every handler runs under a time limit on the Clock; a failure, defect or timeout counts as
 * "continue" (approval: "deny") and publishes an `Error` event naming the handler (`stage`) and
 * the hook (`hook`). Texts from hooks pass `cleanDecision`: secrets scrubbed (`Secrets`), and
 * what a hook says in the loop's name cut to `Hook.TEXT_LIMIT`.
 *
 * `onEvent` observers are not run here: each one gets a bus subscription of its own and a
 * consumer fiber in its registration scope, so it sees every event yet never slows a turn.
 */
import type * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { readCause, show } from "../domain/causeMessage.ts"
import * as AgentEvent from "../domain/Event.ts"
import * as Hook from "../domain/Hook.ts"
import { EventBus, type EventBusShape } from "../services/EventBus.ts"
import { Hooks, type HookInfo, type HookOutcome, type HooksShape, type Named, type RunPoint } from "../services/Hooks.ts"
import { LoopConfig } from "../services/LoopConfig.ts"
import { Secrets } from "../services/Secrets.ts"
import { cleanDecision, pointNames, type PointRule, points, type TextRules } from "./internal/hookPoints.ts"

interface Entry {
  readonly hook: Hook.Hook
  readonly name: string
  readonly priority: number
  readonly source: string
  readonly seq: number
  readonly timeout: Duration.Duration | undefined
}

/** What one handler did: its decision (`undefined` = continue), or why it counts as not having decided. */
type Ran<D> =
  | { readonly _tag: "Done"; readonly decision: D | undefined }
  | { readonly _tag: "Failed"; readonly message: string }

const describeCause = (point: string, cause: Cause.Cause<unknown>): string => {
  const reading = readCause(cause)
  if (reading._tag === "Error") return `${point} failed: ${show(reading.error)}`
  if (reading._tag === "Defect") return `${point} died: ${show(reading.defect)}`
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
): Effect.Effect<Ran<D>> =>
  Effect.suspend(() => {
    const returned = call()
    return Effect.isEffect(returned)
      ? (returned as Effect.Effect<D | void, unknown>)
      : Effect.succeed(returned as D | void)
  }).pipe(
    Effect.timeoutOption(timeout),
    Effect.exit,
    Effect.map((exit): Ran<D> => {
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

/** Where a point's input says it runs: its `context`, or (session points) the session alone. */
const contextOf = (input: unknown): Hook.HookContext => {
  const i = input as { readonly context?: Hook.HookContext; readonly sessionKey?: string }
  return i.context ?? Hook.sessionContext(i.sessionKey ?? "")
}

/** Builds the registry and runner from the loop's config and bus. */
export const make: Effect.Effect<HooksShape, never, LoopConfig | EventBus> = Effect.gen(function*() {
  const config = yield* LoopConfig
  const bus = yield* EventBus
  const secrets = yield* Secrets
  const text: TextRules = {
    said: (t) => Hook.limitText(secrets.scrub(t)),
    substituted: (t) => secrets.scrub(t)
  }
  let entries: ReadonlyArray<Entry> = []
  let registered = 0
  const handling = {} as Record<Hook.Point, ReadonlyArray<Entry>>
  const rebuild = () => {
    entries = [...entries].sort((a, b) => b.priority - a.priority || a.seq - b.seq)
    for (const point of pointNames) handling[point] = entries.filter((e) => e.hook[point] !== undefined)
  }
  rebuild()

  const reportFailure = (entry: Entry, point: Hook.Point, context: Hook.HookContext, message: string) =>
    publishError(bus, context, point, entry.name, text.said(message))

  /** Runs one entry's handler; a failure is published and counts as no decision. */
  const runEntry = <D>(
    entry: Entry,
    point: Hook.Point,
    context: Hook.HookContext,
    timeout: Duration.Duration,
    call: () => Hook.HookReturn<D>
  ): Effect.Effect<Ran<D>> =>
    Effect.tap(runHandler(point, timeout, call), (ran) =>
      ran._tag === "Failed" ? reportFailure(entry, point, context, ran.message) : Effect.void)

  const run = <K extends RunPoint>(point: K, input: Hook.InputOf<K>): Effect.Effect<HookOutcome<K>> => {
    const list = handling[point]
    if (list.length === 0) return Effect.succeed({ _tag: "Continue", input })
    const rule = points[point] as PointRule<K>
    const context = contextOf(input)
    return Effect.gen(function*() {
      let current = input
      // who changed the input, so that a change the loop cannot use is blamed on its hook
      let changedBy: Array<string> | undefined
      for (const entry of list) {
        const handler = entry.hook[point] as (input: Hook.InputOf<K>) => Hook.HookReturn<Hook.DecisionOf<K>>
        const ran = yield* runEntry(entry, point, context, entry.timeout ?? config.hookTimeout, () => handler(current))
        if (ran._tag === "Failed" || ran.decision === undefined) continue
        const decision = cleanDecision(ran.decision as Hook.DecisionOf<K> & { readonly _tag: string }, text)
        if ((rule.stopOn as ReadonlyArray<string>).includes(decision._tag)) {
          return { ...(decision as Hook.StopOf<K>), hook: entry.name } as Named<Hook.StopOf<K>>
        }
        if (rule.apply !== undefined && (decision._tag === "Modify" || decision._tag === "Patch")) {
          current = rule.apply(current, decision as Hook.ChangeOf<K>)
          changedBy = changedBy === undefined ? [entry.name] : [...changedBy, entry.name]
        }
      }
      return changedBy === undefined ? { _tag: "Continue" as const, input: current } : { _tag: "Continue" as const, input: current, changedBy }
    })
  }

  const observe = (entry: Entry, handler: NonNullable<Hook.Hook["onEvent"]>) => (event: AgentEvent.AgentEvent) =>
    Effect.flatMap(runHandler("onEvent", entry.timeout ?? config.hookTimeout, () => handler(event)), (ran) => {
      if (ran._tag === "Done") return Effect.void
      // An observer failing on another observer's error report would feed itself forever: log it instead.
      return isOnEventError(event)
        ? Effect.logWarning(`hook ${entry.name}: ${text.said(ran.message)}`)
        : reportFailure(entry, "onEvent", event, ran.message)
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
          entries = [...entries, entry]
          rebuild()
        }),
        () =>
          Effect.sync(() => {
            entries = entries.filter((e) => e !== entry)
            rebuild()
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
      handlers: pointNames.filter((h) => e.hook[h] !== undefined)
    }))
  )

  const noApprover = Effect.succeed(
    config.autoApprove ? Hook.approve : { ...Hook.deny("no approver registered"), hook: "" }
  )

  /** Fail-closed: a failing approver denies; any deny denies at once; approval needs an approver (or `autoApprove`). */
  const approveTool: HooksShape["approveTool"] = (input) =>
    handling.approveTool.length === 0 ? noApprover : Effect.gen(function*() {
      let approved = false
      for (const entry of handling.approveTool) {
        const ran = yield* runEntry(entry, "approveTool", input.context, entry.timeout ?? config.approvalTimeout, () =>
          entry.hook.approveTool!(input))
        const decision = ran._tag === "Failed"
          ? Hook.deny(text.said(`approval by ${entry.name}: ${ran.message}`))
          : ran.decision && cleanDecision(ran.decision, text)
        // any deny denies, so nobody after it is asked (a prompt would ask the user for nothing)
        if (decision?._tag === "Deny") return { ...decision, hook: entry.name }
        if (decision?._tag === "Approve") approved = true
      }
      return approved || config.autoApprove ? Hook.approve : { ...Hook.deny("no approver decided"), hook: "" }
    })

  const shape: HooksShape = {
    register,
    list,
    handles: (point) => handling[point].length > 0,
    run,
    approveTool
  }
  return shape
})

/** The registry and runner, configured by `LoopConfig` and reporting on the `EventBus`. */
export const layer: Layer.Layer<Hooks, never, LoopConfig | EventBus> = Layer.effect(Hooks, make)
