/**
 * What Claude Code hooks tell the approval step and the screen: a `PreToolUse` hook's
 * `permissionDecision` of `allow` or `ask` for a call (a `deny` denies the call at `beforeTool`
 * itself), the `PermissionRequest` hooks that may answer instead of the user and the
 * `Notification` hooks to run when the user is about to be asked, and a `Stop` hook sending the
 * model back (for the screen to say so). The approver (the CLI's prompt) reads a call's verdict
 * once; verdicts of calls that never reach it are dropped past a bound.
 */
import * as Effect from "effect/Effect"
import type { HookContext, HookToolCall } from "../../domain/Hook.ts"

/** A hook's word on one call. */
export interface PermissionVerdict {
  readonly decision: "allow" | "ask"
  readonly reason: string | undefined
  /** The hook that said it. */
  readonly hook: string
}

/** A `PermissionRequest` hook's answer in place of the user's. */
export interface PermissionAnswer {
  readonly decision: "allow" | "deny"
  readonly reason: string | undefined
  readonly hook: string
}

/** The bridge between the hooks and the approver. */
export interface Bridge {
  /** Records a verdict; `ask` wins over `allow` when hooks disagree. */
  readonly record: (callId: string, verdict: PermissionVerdict) => void
  /** The call's verdict, if any, without forgetting it. */
  readonly peek: (callId: string) => PermissionVerdict | undefined
  /** The call's verdict, forgotten. */
  readonly take: (callId: string) => PermissionVerdict | undefined
  /** Adds what runs on `notify`. */
  readonly onNotify: (listener: (context: HookContext, message: string) => Effect.Effect<void>) => void
  /** Runs the `Notification` listeners (each returns at once: they run detached). */
  readonly notify: (context: HookContext, message: string) => Effect.Effect<void>
  /** Sets what answers `permissionRequest` (the `PermissionRequest` hooks). */
  readonly onPermissionRequest: (answer: (context: HookContext, call: HookToolCall) => Effect.Effect<PermissionAnswer | undefined>) => void
  /** Before the user is asked about `call`: a hook's answer, or `undefined` to ask. */
  readonly permissionRequest: (context: HookContext, call: HookToolCall) => Effect.Effect<PermissionAnswer | undefined>
  /** Adds what runs on `continued` (the screen's line). */
  readonly onContinued: (listener: (context: HookContext, reason: string) => Effect.Effect<void>) => void
  /** A `Stop` hook sent the model back with `reason`. */
  readonly continued: (context: HookContext, reason: string) => Effect.Effect<void>
  /** A hook said `continue: false`: the turn ends, and its `stopReason` is all the user is shown. */
  readonly stopQuietly: (turnId: string, reason: string) => void
  /** Whether (and why) a hook stopped the turn with `continue: false`, forgotten. */
  readonly takeQuietStop: (turnId: string) => string | undefined
  /** How the session is about to start, for `SessionStart`'s `source` (`startup` when not said). */
  readonly startsAs: (sessionKey: string, source: SessionSource) => void
  /** How the session started, forgotten. */
  readonly takeStart: (sessionKey: string) => SessionSource
  /** Why the session is about to end, for `SessionEnd`'s `reason` (`other` when not said). */
  readonly endsFor: (sessionKey: string, reason: EndReason) => void
  /** Why the session ended, forgotten. */
  readonly takeEnd: (sessionKey: string) => EndReason
  /** Adds what ends a session's hooks now (the layer's `SessionEnd`, once per start). */
  readonly onEndNow: (end: (sessionKey: string, reason: EndReason) => Effect.Effect<void>) => void
  /**
   * Runs the `SessionEnd` hooks of a session that is being left (chat's `/clear`) now, with
   * `reason`, rather than when the loop releases it; they do not run again then.
   */
  readonly endNow: (sessionKey: string, reason: EndReason) => Effect.Effect<void>
}

/** `SessionStart`'s `source`, as Claude Code names them. */
export type SessionSource = "startup" | "resume" | "clear" | "compact"

/** `SessionEnd`'s `reason`, as Claude Code names them. */
export type EndReason = "clear" | "logout" | "prompt_input_exit" | "other"

/** Most verdicts kept: the oldest go first (a denied or failed call never reaches the approver). */
export const MAX_VERDICTS = 1024

/** A new bridge. */
export const make = (): Bridge => {
  const verdicts = new Map<string, PermissionVerdict>()
  const listeners: Array<(context: HookContext, message: string) => Effect.Effect<void>> = []
  const continuedListeners: Array<(context: HookContext, reason: string) => Effect.Effect<void>> = []
  const quietStops = new Map<string, string>()
  const starts = new Map<string, SessionSource>()
  const ends = new Map<string, EndReason>()
  let answer: ((context: HookContext, call: HookToolCall) => Effect.Effect<PermissionAnswer | undefined>) | undefined
  const enders: Array<(sessionKey: string, reason: EndReason) => Effect.Effect<void>> = []
  return {
    record: (callId, verdict) => {
      const before = verdicts.get(callId)
      if (before?.decision === "ask") return
      verdicts.delete(callId)
      verdicts.set(callId, verdict)
      if (verdicts.size > MAX_VERDICTS) verdicts.delete(verdicts.keys().next().value!)
    },
    peek: (callId) => verdicts.get(callId),
    take: (callId) => {
      const verdict = verdicts.get(callId)
      verdicts.delete(callId)
      return verdict
    },
    onNotify: (listener) => {
      listeners.push(listener)
    },
    notify: (context, message) => Effect.forEach(listeners, (listener) => listener(context, message), { discard: true }),
    onPermissionRequest: (f) => {
      answer = f
    },
    permissionRequest: (context, call) => (answer === undefined ? Effect.succeed(undefined) : answer(context, call)),
    onContinued: (listener) => {
      continuedListeners.push(listener)
    },
    continued: (context, reason) => Effect.forEach(continuedListeners, (listener) => listener(context, reason), { discard: true }),
    stopQuietly: (turnId, reason) => {
      quietStops.set(turnId, reason)
      if (quietStops.size > MAX_VERDICTS) quietStops.delete(quietStops.keys().next().value!)
    },
    takeQuietStop: (turnId) => {
      const reason = quietStops.get(turnId)
      quietStops.delete(turnId)
      return reason
    },
    startsAs: (sessionKey, source) => {
      starts.set(sessionKey, source)
    },
    takeStart: (sessionKey) => {
      const source = starts.get(sessionKey) ?? "startup"
      starts.delete(sessionKey)
      return source
    },
    endsFor: (sessionKey, reason) => {
      ends.set(sessionKey, reason)
    },
    takeEnd: (sessionKey) => {
      const reason = ends.get(sessionKey) ?? "other"
      ends.delete(sessionKey)
      return reason
    },
    onEndNow: (end) => {
      enders.push(end)
    },
    endNow: (sessionKey, reason) => Effect.forEach(enders, (end) => end(sessionKey, reason), { discard: true })
  }
}
