/**
 * `agent-loop permissions list`: the permission rules a run in this workspace would apply, deny
 * rules first, each with the settings file (or flag) it is written in, and where "always allow"
 * at the approval prompt would save a rule. An untrusted workspace's files give only their deny
 * and ask rules, and the list says so.
 */
import * as Effect from "effect/Effect"
import { describe } from "../config/settingsLevels.ts"
import * as Settings from "../settings/settings.ts"
import { clean } from "../terminal/safeText.ts"
import { Screen } from "../terminal/screen.ts"

const ORDER = { deny: 0, ask: 1, allow: 2 } as const

/** Lists the rules on stdout, one per line (`KIND  RULE  FILE`), and what applies of the files on stderr. */
export const list = (flags: Settings.SandboxFlags) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const resolved = yield* Settings.resolveSandbox(flags)
    for (const notice of resolved.notices) yield* screen.line(clean(`agent-loop: ${notice.level}: ${notice.text}`))
    const rules = [...resolved.rules].sort((a, b) => ORDER[a.kind] - ORDER[b.kind])
    if (rules.length === 0) yield* screen.line("no permission rules: calls that need approval ask (or are denied without a terminal)")
    for (const rule of rules) yield* screen.text(clean(`${rule.kind.padEnd(5)}  ${rule.text}  ${describe(rule.source)}`) + "\n")
    const target = resolved.permissions.saveTarget
    yield* screen.line(
      target === undefined
        ? "the workspace is not trusted: only the deny and ask rules of its files apply, and \"always allow\" saves nothing"
        : clean(`"always allow" saves to ${target}`)
    )
  })
