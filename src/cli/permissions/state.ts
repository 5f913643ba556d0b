/**
 * The permission rules of one CLI process: those of the settings files and flags, plus the rules
 * the user allows for the session at the approval prompt; and saving a rule into the workspace's
 * settings (`.agent-loop/settings.json`, whose other contents are kept as they are).
 */
import * as fs from "node:fs/promises"
import * as nodePath from "node:path"
import { Effect } from "effect"
import { evaluate, parseRule, type Rule, RuleError, type RuleCall, suggest, type Verdict } from "./rules.ts"

/** The process's rules. */
export interface Permissions {
  readonly evaluate: (call: RuleCall) => Verdict
  /** Rules that would allow `call` from now on (see `rules.suggest`). */
  readonly suggest: (call: RuleCall) => ReadonlyArray<string>
  /** Adds allow rules for the rest of the process. */
  readonly allowForSession: (rules: ReadonlyArray<string>) => void
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
  const allowForSession = (texts: ReadonlyArray<string>) => {
    for (const text of texts) {
      const rule = parseRule(text, "allow", "this session")
      if (!(rule instanceof RuleError)) all = [...all, rule]
    }
  }
  return {
    evaluate: (call) => evaluate(all, call, workspace),
    suggest: (call) => suggest(all, call),
    allowForSession,
    saveTarget,
    save: (texts) =>
      saveTarget === undefined
        ? Effect.fail("the workspace is not trusted, so its settings are not read")
        : Effect.tryPromise({
          try: () => addAllowRules(saveTarget, texts),
          catch: (error) => `cannot save to ${saveTarget}: ${error instanceof Error ? error.message : String(error)}`
        })
  }
}

/** Adds `rules` to `permissions.allow` of the JSON file at `path`, written whole through a renamed temporary file. */
const addAllowRules = async (path: string, rules: ReadonlyArray<string>) => {
  let settings: Record<string, unknown> = {}
  const text = await fs.readFile(path, "utf8").catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined
    throw error
  })
  if (text !== undefined) {
    const parsed: unknown = JSON.parse(text)
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("it does not hold a JSON object")
    settings = parsed as Record<string, unknown>
  }
  const permissions = { ...(settings["permissions"] as Record<string, unknown> | undefined) }
  const allow = Array.isArray(permissions["allow"]) ? [...(permissions["allow"] as Array<unknown>)] : []
  for (const rule of rules) if (!allow.includes(rule)) allow.push(rule)
  const next = { ...settings, permissions: { ...permissions, allow } }
  await fs.mkdir(nodePath.dirname(path), { recursive: true })
  const temp = `${path}.${process.pid}.tmp`
  await fs.writeFile(temp, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o644 })
  await fs.rename(temp, path)
}
