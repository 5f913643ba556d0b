/**
 * Permission rules on hostile `exec` commands: milliseconds to read and judge 1 MiB and 4 MiB of
 * text built to make a careless reader or matcher slow (deep substitutions, a million quotes,
 * half a million words against a glob rule, a million separators, a long line of stars against a
 * star pattern). Linear means the 4 MiB figure is about four times the 1 MiB one.
 *
 *   node bench/permissionRules.ts
 */
import { evaluate, parseRule, type Rule } from "../src/cli/permissions/rules.ts"

const rules = [parseRule("exec(a *)", "allow", "bench"), parseRule("exec(git status:*)", "allow", "bench"), parseRule("exec(*rm*x*)", "deny", "bench")] as ReadonlyArray<Rule>

const inputs: Record<string, (size: number) => string> = {
  "nested $( then text": (size) => "$(".repeat(15) + "a".repeat(size),
  "quotes": (size) => "\"".repeat(size),
  "words vs glob": (size) => "a ".repeat(size / 2),
  "separators": (size) => ";".repeat(size),
  "stars vs *rm*x*": (size) => "r".repeat(size) + "m"
}

const time = (text: string) => {
  const start = performance.now()
  evaluate(rules, { name: "exec", arguments: { command: text } }, "/w")
  return performance.now() - start
}

for (const [name, make] of Object.entries(inputs)) {
  const small = make(1 << 20)
  const large = make(1 << 22)
  time(small) // warm up
  const a = Math.min(time(small), time(small), time(small))
  const b = Math.min(time(large), time(large), time(large))
  console.log(`${name.padEnd(22)} 1 MiB ${a.toFixed(1).padStart(7)} ms   4 MiB ${b.toFixed(1).padStart(7)} ms   ratio ${(b / a).toFixed(1)}`)
}
