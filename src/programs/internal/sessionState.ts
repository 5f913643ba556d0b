/**
 * A session's state in a loop, and every change made to it: `transition`, a pure function of the
 * state and an event, so a session's life reads in one place and is tested without fibers. What a
 * change asks for (steer a turn, start a drain, run `sessionEnd`) is its `Action`, which the
 * runner (`sessionRunner.ts`) carries out; arming and cancelling the idle timer follow from
 * entering and leaving `Idle`.
 *
 * ```
 *  (none) ─Hold, Route─▶ Running ─last holder leaves─▶ Idle ─Expire─▶ Releasing ─Released─▶ (none)
 *                          ▲                              │                ┆
 *                          └────────Hold, Route───────────┘     Hold, Route wait for Released
 * ```
 *
 * A drain is how turns follow one another: a turn, then the follow-ups it leaves (first) and the
 * messages that waited behind it (after), one turn at a time until none is left. Its record
 * (`Drain`) lives in the session's state for the router, whose messages join it, or with the door
 * that runs it (chat, a cluster request); `advance` moves it on in both places.
 */
import * as Deferred from "effect/Deferred"
import * as Semaphore from "effect/Semaphore"
import type * as RunningTurn from "./runningTurn.ts"

/** A message waiting to run as a turn: its text, and the model, tools and pre-approvals a custom command asks for. */
export interface Queued {
  readonly text: string
  readonly model?: string | undefined
  readonly tools?: ReadonlyArray<string> | undefined
  /** Permission rules the host pre-approves for the turn (a command file's `allowed-tools`), and where they come from. */
  readonly allow?: { readonly rules: ReadonlyArray<string>; readonly source: string } | undefined
}

/** A drain in progress. */
export interface Drain {
  /** How many turns it has run. */
  readonly ran: number
  /** What waits behind its running turn, in the order it will run. */
  readonly backlog: ReadonlyArray<Queued>
  /** The turn decided on next, made early so that steering reaches it before it starts (the router's). */
  readonly upcoming: RunningTurn.RunningTurn | undefined
}

/** One turn of a drain. */
export interface Step {
  readonly message: Queued
  /** How many turns of the drain ran before this one. */
  readonly index: number
  /** What waits behind this turn as it starts, in order (a cluster request stores it). */
  readonly waiting: ReadonlyArray<Queued>
  /** The turn made early for it, if any. */
  readonly turn: RunningTurn.RunningTurn | undefined
}

/** Makes a turn early for a message routed to a session (the router's), or none. */
export type Early = (message: Queued) => RunningTurn.RunningTurn | undefined

/** Nothing runs or waits; the session is released once it has been idle for `sessionIdleTimeout`. */
export interface Idle {
  readonly _tag: "Idle"
  /** Whether `sessionStart` ran in this life of the session (then `sessionEnd` runs when it ends). */
  readonly started: boolean
}

/** Turns, summaries or a drain hold the session, or wait for its lock. */
export interface Running {
  readonly _tag: "Running"
  readonly started: boolean
  /** Serialises the session's turns and summaries: first come, first served. */
  readonly lock: Semaphore.Semaphore
  /** How many turns, summaries and drains hold the session (running, or waiting for the lock). */
  readonly holders: number
  /** The turn holding the lock. */
  readonly active: RunningTurn.RunningTurn | undefined
  /** The router's drain, which messages routed to the session join. */
  readonly drain: Drain | undefined
}

/** `sessionEnd` runs; the session is then forgotten. A turn or message arriving meanwhile waits for it. */
export interface Releasing {
  readonly _tag: "Releasing"
  /** Done once `sessionEnd` ran and the session was forgotten. */
  readonly ended: Deferred.Deferred<void>
}

/** A session's state; a session the loop holds nothing for has none (`undefined`). */
export type State = Idle | Running | Releasing

/** What happens to a session. */
export type Event =
  /** A turn, summary or compaction asks for the session. */
  | { readonly _tag: "Hold" }
  /** One of them is done with it. */
  | { readonly _tag: "Leave" }
  /** A turn took the session's lock. */
  | { readonly _tag: "Begin"; readonly turn: RunningTurn.RunningTurn }
  /** That turn ended. */
  | { readonly _tag: "End"; readonly turn: RunningTurn.RunningTurn }
  /** A message for the session (the router's `send`). */
  | { readonly _tag: "Route"; readonly message: Queued; readonly early: Early }
  /** The router's drain ran a turn, which left these follow-ups. */
  | { readonly _tag: "Next"; readonly followUps: ReadonlyArray<string>; readonly early: Early }
  /** The router's drain stopped before its end (interrupted): what waited behind it is dropped. */
  | { readonly _tag: "Stop" }
  /** The idle time passed since the session became `idle`. */
  | { readonly _tag: "Expire"; readonly idle: Idle }
  /** `sessionEnd` ran. */
  | { readonly _tag: "Released"; readonly releasing: Releasing }

/** What the runner does after a change. */
export type Action =
  | { readonly _tag: "Nothing" }
  /** Steer this open turn with the routed message. */
  | { readonly _tag: "Steer"; readonly turn: RunningTurn.RunningTurn }
  /** The routed message waits behind the drain. */
  | { readonly _tag: "Queued" }
  /** The session is ending: try again once it has (`Hold`, `Route`), so one life's end comes before the next one's start. */
  | { readonly _tag: "Wait"; readonly ended: Deferred.Deferred<void> }
  /** Run this step: the first of a new drain (`Route`), or the drain's next (`Next`). */
  | { readonly _tag: "Run"; readonly step: Step }
  /** The turn holds the lock; `first`: the first of this life of the session (`sessionStart` runs). */
  | { readonly _tag: "Begun"; readonly first: boolean }
  /** End the session (`sessionEnd` when it `started`), then `Released`. */
  | { readonly _tag: "End"; readonly started: boolean; readonly releasing: Releasing }

const nothing: Action = { _tag: "Nothing" }

/** A new drain whose first turn runs `message`. */
export const startDrain = (message: Queued, early: Early): { readonly drain: Drain; readonly step: Step } => {
  const upcoming = early(message)
  return { drain: { ran: 0, backlog: [], upcoming }, step: { message, index: 0, waiting: [], turn: upcoming } }
}

/** `message` waits behind the drain's running turn. */
export const queue = (drain: Drain, message: Queued): Drain => ({ ...drain, backlog: [...drain.backlog, message] })

/**
 * After a turn of the drain: the follow-ups it left go first, then what waited; the next step, or
 * none (the drain is over: `drain` is `undefined`).
 */
export const advance = (drain: Drain, followUps: ReadonlyArray<string>, early: Early): { readonly drain: Drain | undefined; readonly step: Step | undefined } => {
  const [message, ...waiting] = followUps.length === 0 ? drain.backlog : [...followUps.map((text) => ({ text })), ...drain.backlog]
  if (message === undefined) return { drain: undefined, step: undefined }
  const upcoming = early(message)
  const ran = drain.ran + 1
  return { drain: { ran, backlog: waiting, upcoming }, step: { message, index: ran, waiting, turn: upcoming } }
}

/**
 * The session's turn, as `activeTurn` shows it: the one running while it takes input, else the one
 * its drain decided on next, else the one running (ending).
 */
export const currentTurn = (state: State | undefined): RunningTurn.RunningTurn | undefined => {
  if (state?._tag !== "Running") return undefined
  const { active, drain } = state
  return active !== undefined && !active.closed ? active : drain?.upcoming ?? active
}

/** The session's turn that a message steers: its current turn, while that takes input. */
export const openTurn = (state: State | undefined): RunningTurn.RunningTurn | undefined => {
  const turn = currentTurn(state)
  return turn !== undefined && !turn.closed ? turn : undefined
}

/** A new `Running`: a new life unless the session was `Idle`. */
const running = (state: Idle | undefined, drain: Drain | undefined): Running => ({
  _tag: "Running",
  started: state?._tag === "Idle" && state.started,
  lock: Semaphore.makeUnsafe(1),
  holders: 1,
  active: undefined,
  drain
})

/** One holder fewer: `Idle` once none is left. */
const leave = (state: Running): State => state.holders > 1 ? { ...state, holders: state.holders - 1 } : { _tag: "Idle", started: state.started }

/** The session's next state, and what the runner does about it. */
export const transition = (state: State | undefined, event: Event): readonly [State | undefined, Action] => {
  switch (event._tag) {
    case "Hold":
      if (state?._tag === "Releasing") return [state, { _tag: "Wait", ended: state.ended }]
      return [state?._tag === "Running" ? { ...state, holders: state.holders + 1 } : running(state, undefined), nothing]
    case "Leave":
      return state?._tag === "Running" ? [leave(state), nothing] : [state, nothing]
    case "Begin":
      if (state?._tag !== "Running") return [state, nothing]
      return [{
        ...state,
        started: true,
        active: event.turn,
        drain: state.drain?.upcoming === event.turn ? { ...state.drain, upcoming: undefined } : state.drain
      }, { _tag: "Begun", first: !state.started }]
    case "End":
      return state?._tag === "Running" && state.active === event.turn ? [{ ...state, active: undefined }, nothing] : [state, nothing]
    case "Route": {
      if (state?._tag === "Releasing") return [state, { _tag: "Wait", ended: state.ended }]
      const open = openTurn(state)
      if (open !== undefined) return [state, { _tag: "Steer", turn: open }]
      if (state?._tag === "Running" && state.drain !== undefined) return [{ ...state, drain: queue(state.drain, event.message) }, { _tag: "Queued" }]
      const { drain, step } = startDrain(event.message, event.early)
      // the drain holds the session until it is over
      const next = state?._tag === "Running" ? { ...state, holders: state.holders + 1, drain } : running(state, drain)
      return [next, { _tag: "Run", step }]
    }
    case "Next": {
      if (state?._tag !== "Running" || state.drain === undefined) return [state, nothing]
      const { drain, step } = advance(state.drain, event.followUps, event.early)
      // over: the drain lets go of the session in the same step, so no message can join it now
      if (step === undefined) return [leave({ ...state, drain: undefined }), nothing]
      return [{ ...state, drain }, { _tag: "Run", step }]
    }
    case "Stop":
      return state?._tag === "Running" && state.drain !== undefined ? [leave({ ...state, drain: undefined }), nothing] : [state, nothing]
    case "Expire": {
      if (state !== event.idle) return [state, nothing]
      const releasing: Releasing = { _tag: "Releasing", ended: Deferred.makeUnsafe() }
      return [releasing, { _tag: "End", started: event.idle.started, releasing }]
    }
    case "Released":
      return state === event.releasing ? [undefined, nothing] : [state, nothing]
  }
}
