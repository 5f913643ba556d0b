/**
 * Permission rules for tests, written as the settings write them: lists by kind, parsed as one
 * settings file's (`source`), in the order the rules are evaluated. A rule that cannot be read
 * throws: a test's rules are meant to be read.
 */
import { parseRule, type Rule, RuleError, type RuleKind } from "../../src/cli/permissions/rules.ts"

/** Rules by kind, as a settings file's `permissions` lists them. */
export type RuleLists = Partial<Record<RuleKind, ReadonlyArray<string>>>

/** The rules of `lists`, as if read from `source`. */
export const ruleList = (lists: RuleLists, source = "settings.json"): ReadonlyArray<Rule> =>
  (["deny", "ask", "allow"] as const).flatMap((kind) =>
    (lists[kind] ?? []).map((text) => {
      const rule = parseRule(text, kind, source)
      if (rule instanceof RuleError) throw new Error(rule.message)
      return rule
    })
  )
