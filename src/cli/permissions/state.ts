/**
 * The permission rules of one CLI process: those of the settings files and flags, plus the rules
 * the user allows for the session at the approval prompt; and saving a rule into the workspace's
 * settings (`.agent-loop/settings.json`, whose other contents are kept as they are).
 */
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import { problemOf, readConfined, textOf } from "../../layers/internal/readConfined.ts"
import type { PathRule } from "../../services/Workspace.ts"
import { MAX_SETTINGS_BYTES } from "../config/settingsFile.ts"
import { evaluate, parseRule, reachesPrivate, type Rule, RuleError, type RuleCall, SESSION_SOURCE, suggest, type Verdict } from "./rules.ts"
import { isWithin } from "../../domain/paths.ts"

/** The process's rules. */
export interface Permissions {
  readonly evaluate: (call: RuleCall) => Verdict
  /**
   * What the deny and ask rules say of `tool` reaching `path` (relative to the workspace): the
   * workspace's path rule, which the file tools apply to a link's target and to what a walk meets.
   */
  readonly pathRule: PathRule
  /** Whether `web_fetch` may reach `host` at an address that is not public (see `rules.reachesPrivate`). */
  readonly reachesPrivate: (host: string) => boolean
  /** Rules that would allow `call` from now on (see `rules.suggest`). */
  readonly suggest: (call: RuleCall) => ReadonlyArray<string>
  /** Adds allow rules for the rest of the process (`source`: where they come from; default `this session`). */
  readonly allowForSession: (rules: ReadonlyArray<string>, source?: string) => void
  /**
   * Runs `effect` with allow rules `rules` (from `source`, e.g. a command file's `allowed-tools`)
   * added while it runs, and removed after however it ends; a rule that cannot be read is left out.
   */
  readonly withAllowed: (rules: ReadonlyArray<string>, source: string) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** The file `save` writes to; `undefined` when the workspace is not trusted (its settings would not be read). */
  readonly saveTarget: string | undefined
  /** Adds allow rules to `saveTarget`; fails with a message. */
  readonly save: (rules: ReadonlyArray<string>) => Effect.Effect<void, string>
}

/** Rules with no effect: for a caller without any. */
export const none = (workspace: string): Permissions => make([], workspace, undefined)

/** The rules `rules` of `workspace`, saving to `saveTarget`. */
export const make = (rules: ReadonlyArray<Rule>, workspace: string, saveTarget: string | undefined): Permissions => {
  let all = rules
  const allowForSession = (texts: ReadonlyArray<string>, source: string = SESSION_SOURCE) => {
    for (const text of texts) {
      const rule = parseRule(text, "allow", source)
      if (!(rule instanceof RuleError)) all = [...all, rule]
    }
  }
  const withAllowed = (texts: ReadonlyArray<string>, source: string) => <A, E, R>(effect: Effect.Effect<A, E, R>) => {
    const added = texts.map((text) => parseRule(text, "allow", source)).filter((rule): rule is Rule => !(rule instanceof RuleError))
    if (added.length === 0) return effect
    return Effect.acquireUseRelease(
      Effect.sync(() => {
        all = [...all, ...added]
      }),
      () => effect,
      () =>
        Effect.sync(() => {
          all = all.filter((rule) => !added.includes(rule))
        })
    )
  }
  return {
    evaluate: (call) => evaluate(all, call, workspace),
    pathRule: (tool, path) => {
      const verdict = evaluate(all, { name: tool, arguments: { path } }, workspace)
      return verdict._tag === "Deny" || verdict._tag === "Ask" ? { _tag: verdict._tag, rule: verdict.rule.text } : undefined
    },
    reachesPrivate: (host) => reachesPrivate(all, host, workspace),
    suggest: (call) => suggest(all, call, workspace),
    allowForSession,
    withAllowed,
    saveTarget,
    save: (texts) =>
      saveTarget === undefined
        ? Effect.fail("the workspace is not trusted, so its settings are not read")
        : addAllowRules(saveTarget, workspace, texts).pipe(Effect.mapError((message) => `cannot save to ${saveTarget}: ${message}`))
  }
}

const messageOf = (error: unknown): string => error instanceof Error ? error.message : String(error)

/**
 * Adds `rules` to `permissions.allow` of the JSON file at `path` inside `workspace`, written whole
 * through a renamed temporary file. It is read as the settings are (`readConfined`: not through a
 * link out of the workspace, bounded), and written only into a directory that is really inside
 * the workspace, so a `.agent-loop` that is a link elsewhere is neither copied in nor written to.
 */
const addAllowRules = (path: string, workspace: string, rules: ReadonlyArray<string>): Effect.Effect<void, string> =>
  Effect.gen(function*() {
    const read = yield* readConfined(path, { within: workspace, ownedByUser: true, maxBytes: MAX_SETTINGS_BYTES, warn: false })
    if (read._tag === "Skipped") return yield* Effect.fail(read.reason)
    let settings: Record<string, unknown> = {}
    if (read._tag !== "Missing") {
      const problem = problemOf(read, MAX_SETTINGS_BYTES)
      if (problem !== undefined) return yield* Effect.fail(problem)
      const parsed = yield* Effect.try({ try: (): unknown => JSON.parse(textOf(read) ?? ""), catch: () => "it is not valid JSON" })
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return yield* Effect.fail("it does not hold a JSON object")
      settings = parsed as Record<string, unknown>
    }
    const permissions = { ...(settings["permissions"] as Record<string, unknown> | undefined) }
    const allow = Array.isArray(permissions["allow"]) ? [...(permissions["allow"] as Array<unknown>)] : []
    for (const rule of rules) if (!allow.includes(rule)) allow.push(rule)
    const next = { ...settings, permissions: { ...permissions, allow } }
    yield* Effect.tryPromise({
      try: async () => {
        const directory = nodePath.dirname(path)
        await fs.mkdir(directory, { recursive: true })
        const [root, real] = await Promise.all([fs.realpath(workspace), fs.realpath(directory)])
        if (!isWithin(root, real)) throw new Error(`${directory} leads outside ${root} (to ${real})`)
        // into the directory as resolved, so a link swapped in meanwhile is not followed by the rename
        const target = nodePath.join(real, nodePath.basename(path))
        const temp = `${target}.${process.pid}.tmp`
        await fs.writeFile(temp, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o644, flag: "wx" })
        await fs.rename(temp, target)
      },
      catch: messageOf
    })
  })
