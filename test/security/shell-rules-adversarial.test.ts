/**
 * Permission rules on `exec` against a hostile model or repository: shell text written to make
 * the rule reader see something other than what `sh` (dash or bash) runs. Every row is a command
 * and the rules it meets; a command that could get round a deny rule must be denied, one that
 * could get round an allow rule must never be allowed (it asks, or the approval mode decides),
 * and the everyday commands at the end stay allowed.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Hook } from "effect-agent-loop"
import { approvalHook } from "../../src/cli/permissions/approval.ts"
import { evaluate, type Rule, type RuleKind } from "../../src/cli/permissions/rules.ts"
import * as Permissions from "../../src/cli/permissions/state.ts"
import * as Screen from "../../src/cli/terminal/screen.ts"
import { type RuleLists, ruleList } from "../support/rules.ts"

type Lists = Partial<Record<RuleKind, ReadonlyArray<string>>>

/** What a row expects: denied by a rule, anything but allowed, allowed, or anything but denied. */
type Expected = "deny" | "not allowed" | "allowed" | "not denied"

interface Row {
  readonly command: string
  readonly rules: Lists
  readonly expected: Expected
}

const ws = "/home/u/project"

const rules = (lists: RuleLists): ReadonlyArray<Rule> => ruleList(lists, "test")

const verdict = (lists: Lists, command: string): string => {
  const v = evaluate(rules(lists), { name: "exec", arguments: { command } }, ws)
  return v._tag === "None" ? `None${v.why === undefined ? "" : ` (${v.why})`}` : v._tag
}

const check = (row: Row) => {
  const got = verdict(row.rules, row.command)
  if (row.expected === "deny") expect(got, JSON.stringify(row.command)).toBe("Deny")
  else if (row.expected === "allowed") expect(got, JSON.stringify(row.command)).toBe("Allow")
  else if (row.expected === "not denied") expect(got, JSON.stringify(row.command)).not.toBe("Deny")
  else expect(got, JSON.stringify(row.command)).not.toBe("Allow")
}

const denyTouch = (command: string): Row => ({ command, rules: { deny: ["Bash(touch:*)"] }, expected: "deny" })
const denied = (deny: string, command: string): Row => ({ command, rules: { deny: [deny] }, expected: "deny" })
const notAllowed = (allow: ReadonlyArray<string>, command: string): Row => ({ command, rules: { allow }, expected: "not allowed" })
const allowed = (allow: ReadonlyArray<string>, command: string): Row => ({ command, rules: { allow }, expected: "allowed" })

/** The bypasses that were reported: each ran with no prompt. */
const reported: ReadonlyArray<Row> = [
  notAllowed(["Bash(git status:*)"], "git status\r#; touch PWNED"),
  denyTouch("git status\r#; touch PWNED"),
  notAllowed(["exec(git diff:*)"], "git diff --no-index --output=$HOME/.bashrc --dst-prefix='$(touch PWNED)' /dev/null README.md"),
  notAllowed(["exec(git diff:*)"], "git diff --no-index /dev/null ~/.ssh/id_rsa"),
  denyTouch("env -i touch X"),
  denyTouch("command -p touch X"),
  denyTouch("echo X | xargs -n1 touch"),
  denyTouch("nice touch X"),
  denyTouch("timeout 5 touch X"),
  denyTouch("echo $((1)); touch X"),
  denyTouch("cat <<EOF\nhi\nEOF\ntouch X"),
  denyTouch("cat <<EOF\n$(touch X)\nEOF")
]

/** More ways a command could run `touch` past `Bash(touch:*)`. */
const pastDeny: ReadonlyArray<Row> = [
  // wrappers, with options and `--`
  "stdbuf -o0 touch X", "time -p touch X", "nohup touch X", "sudo -u root touch X", "doas touch X", "ionice -c3 touch X",
  "setsid -f touch X", "chrt -i 0 touch X", "taskset 1 touch X", "exec -a x touch X", "builtin command touch X",
  "command -- touch X", "env -- touch X", "env -u HOME touch X", "env -S 'touch X'", "nice -n 5 -- touch X",
  "timeout -s KILL 5 touch X", "timeout --foreground 5s touch X", "nice nice env touch X", "coproc touch X",
  "watch -n1 touch X", "flock /tmp/l touch X", "busybox touch X", "strace -f touch X",
  // code in a string
  "eval touch X", "eval 'touch X'", "sh -c 'touch X'", "bash -lc \"touch X\"", "sh -c \"t''ouch X\"",
  "git -c alias.x='!touch X' x", "awk 'BEGIN { system(\"touch X\") }'", "find . -exec touch {} \\;",
  "find . -execdir touch X {} +", "find . -ok touch {} \\;", "find . -name a -okdir touch {} \\;",
  // spelled differently
  "/usr/bin/touch X", "./node_modules/.bin/../../touch X", "\\touch X", "t''ouch X", "\"touch\" X", "'tou'ch X",
  "tou\\\nch X", "touch${IFS}X", "{touch,X}", "tou?h X", "/usr/bin/tou[c]h X", "$'\\x74ouch' X", "$'touch' X",
  "x=touch; $x X", "$(echo touch) X", "\"$(printf touch)\" X",
  // assignments in front
  "a=b touch X", "a+=b touch X", "a[0]=b touch X", "A=1 B=2 touch X",
  // substitutions and compound commands
  "x=$(touch X)", "echo \"$(touch X)\"", "echo `touch X`", "echo ${x:-$(touch X)}", "echo ${x:-`touch X`}",
  "touch X |& cat", "echo a;touch X", "echo a&&touch X", "(touch X)", "{ touch X; }", "! touch X",
  "case x in x) touch X;& y) ;; esac", "f() { touch X; }; f", "function f { touch X; }; f", "cat <(touch X)",
  "echo >(touch X)", "[[ $(touch X) ]]", "(( $(touch X) ))", "for i in 1; do touch X; done",
  "while true; do touch X; break; done", "if touch X; then :; fi", "cat <<< \"$(touch X)\"",
  "cat <<'EOF'\n$(x)\nEOF\ntouch X", "echo $[1]; touch X", "echo x;\\\ntouch X", "git status\r\ntouch X",
  "git status\u000b; touch X", "echo 'unterminated; touch X", "echo \"a\" 'b; touch X",
  "echo `echo \\`touch X\\``", "bash -o pipefail -c 'touch X'", "sudo -s 'touch X'", "sudo -i touch X", "su -c 'touch X'",
  "alias t=touch\nt X", "setsid ${x:-touch} X", "nice ${x:=touch} X", "${x:+touch} X", "command t$()ouch X<<E", "t$(echo)ouch X", "t``ouch X", "t${x}ouch X", "echo x | xargs t$()ouch X", "python3 -c 'import os; os.system(\"touch X\")'", "xargs sh -c 'touch X'", "nice -n 5 sh -c 'touch X'"
].map(denyTouch)

/** Deny rules whose words hold `/` or `:`, where the words cannot be placed. */
const pastDenyWords: ReadonlyArray<Row> = [
  denied("exec(rm -rf /:*)", "echo $((1)); rm -rf /"),
  denied("exec(npm run build:prod:*)", "echo $((1)); npm run build:prod"),
  denied("exec(/usr/bin/curl:*)", "cat <<EOF\nx\nEOF\ncurl x"),
  denied("exec(git push:*)", "git -C . push --force"),
  denied("exec(git push:*)", "nice git --no-pager push"),
  denied("exec(git push:*)", "git -c alias.p=push p origin main"),
  denied("exec(git push --force:*)", "eval git push --force")
]

/** Deny rules do not see commands in what is placed as an argument. */
const notOverDenied: ReadonlyArray<Row> = ["command -v touch", "git commit -m \"don't touch\"", "echo touch", "grep -rn touch src"]
  .map((command) => ({ command, rules: { deny: ["Bash(touch:*)"] }, expected: "not denied" }))

/** Commands that write files or run code through options of programs people allow. */
const pastAllow: ReadonlyArray<Row> = [
  // the reader's blanks and comments
  ...["\r", "\u000b", "\f", "\u00a0", "\u2003", "\u3000"].map((blank) => notAllowed(["Bash(git status:*)"], `git status${blank}#; touch PWNED`)),
  notAllowed(["Bash(git status:*)"], "git status #x\\\ntouch X"),
  notAllowed(["Bash(git status:*)"], "git status ${x:-$(touch X)}"),
  notAllowed(["Bash(git status:*)"], "git status <(touch X)"),
  notAllowed(["Bash(git status:*)"], "git status <<EOF\n$(touch X)\nEOF"),
  notAllowed(["Bash(git status:*)"], "{git,touch} status"),
  notAllowed(["Bash(git status:*)"], "git() { touch X; }; git status"),
  notAllowed(["Bash(git status:*)"], "git status $'\\n' touch X"),
  // redirections that write, a command of only a redirection included
  notAllowed(["Bash(git status:*)"], "git status; >~/.bashrc"),
  notAllowed(["Bash(git status:*)"], "git status; > ~/.bashrc"),
  ...["echo x >&out.txt", "echo x >& out.txt", "echo x &>out.txt", "echo x >|out.txt", "echo x >>out.txt", "echo x <>out.txt",
    "echo x 2>out.txt", "echo x 2>&1 >out.txt", "echo x >&$HOME/.bashrc", "echo x 1>'/dev/null'x", "echo x &>>out.txt"]
    .map((command) => notAllowed(["exec(echo:*)"], command)),
  // values computed when the command runs
  notAllowed(["exec(git diff:*)", "exec(echo:*)"], "git diff $(echo --output=X)"),
  notAllowed(["exec(git diff:*)", "exec(echo:*)"], "echo --output=X; git diff \"$_\""),
  notAllowed(["exec(git diff:*)"], "git diff x$IFS--output=X"),
  notAllowed(["exec(git diff:*)"], "git diff *"),
  notAllowed(["exec(find:*)"], "find . -exe* touch {} \\;"),
  notAllowed(["exec(cd:*)", "exec(git diff:*)"], "cd / && git diff dev/null etc/passwd"),
  notAllowed(["exec(cd:*)", "exec(git diff:*)"], "cd \"$HOME\" && git diff a .ssh/id_rsa"),
  notAllowed(["exec(rg:*)"], "rg foo *"),
  // git
  ...[
    ["git diff:*", "git diff --output=out.txt"], ["git log:*", "git log --output=/tmp/x"], ["git diff:*", "git diff --output /tmp/x"],
    ["git format-patch:*", "git format-patch -o /tmp/p HEAD~1"], ["git format-patch:*", "git format-patch --output-directory=/tmp/p HEAD~1"],
    ["git:*", "git -c core.pager='touch X' log"], ["git:*", "git --config-env=core.pager=HOME log"], ["git:*", "git --exec-path=/tmp log"],
    ["git:*", "git -C /tmp status"], ["git:*", "git --git-dir=x diff"], ["git:*", "git --work-tree=/ diff"], ["git:*", "git --bare log"],
    ["git fetch:*", "git fetch --upload-pack='touch X' origin"], ["git ls-remote:*", "git ls-remote --upload-pack=x origin"],
    ["git push:*", "git push --receive-pack='touch X' origin"], ["git push:*", "git push --exec='touch X' origin"],
    ["git config:*", "git config core.pager 'touch X'"], ["git:*", "git config --get user.name"],
    ["git diff:*", "git diff --ext-diff"], ["git log:*", "git log -p --textconv"], ["git difftool:*", "git difftool -x 'touch X' HEAD"],
    ["git filter-branch:*", "git filter-branch --tree-filter 'touch X' HEAD"], ["git rebase:*", "git rebase -x 'touch X' HEAD~1"],
    ["git rebase:*", "git rebase --exec='touch X' HEAD~1"], ["git grep:*", "git grep --open-files-in-pager='touch X' foo"],
    ["git grep:*", "git grep -Otouch foo"], ["git grep:*", "git grep --no-index foo /etc"],
    ["git clone:*", "git clone --template=/tmp/t https://x/y"], ["git clone:*", "git clone -c core.fsmonitor='touch X' https://x/y"],
    ["git clone:*", "git clone -u 'touch X' https://x/y"], ["git archive:*", "git archive --remote=x --exec='touch X' HEAD"],
    ["git archive:*", "git archive -o /tmp/x.tar HEAD"], ["git submodule:*", "git submodule foreach 'touch X'"],
    ["git bisect:*", "git bisect run touch X"], ["git diff:*", "git diff /dev/null /etc/passwd"],
    ["git diff:*", "git diff HEAD -- ../../etc/passwd"], ["git diff:*", "git diff --no-index a b"],
    ["git blame:*", "git blame --contents /etc/passwd README.md"], ["git diff:*", "git diff --output=~/.bashrc"],
    ["git diff:*", "git diff --out=/tmp/x"], ["git diff:*", "git diff --no-i a b"], ["git clone:*", "git clone https://x/y /tmp/y"],
    ["git log:*", "git log --ext-diff"], ["git push:*", "git push --receive=touch origin"]
  ].map(([rule, command]) => notAllowed([`exec(${rule})`], command!)),
  // find, sed, awk, tar, rsync, xargs
  ...["find . -exec touch {} \\;", "find . -execdir touch {} +", "find . -ok touch {} \\;", "find . -okdir touch {} \\;", "find . -delete",
    "find . -fprint /tmp/x", "find . -fprint0 x", "find . -fprintf x %p", "find . -fls x"].map((command) => notAllowed(["exec(find:*)"], command)),
  ...["sed -i s/a/b/ f", "sed --in-place=.bak s/a/b/ f", "sed -ni p f", "sed -Ei s/a/b/ f", "sed 'w /tmp/x' f", "sed -n '1W /tmp/x' f",
    "sed 's/a/b/w /tmp/x' f", "sed 's/a/b/e' f", "sed '1e touch X' f", "sed -f script.sed f", "sed --expression='w x' f",
    "sed -e p -e 'w x' f", "sed 's|a|b|gw x' f", "sed '/x/{\nw out\n}' f", "sed 'y/abc/xyz/;w x' f", "sed 's/[/]/x/;w y' f",
    "sed -n '/a/ w x' f", "sed '$!N;e' f", "sed 's/a/b/;s/c/d/3e' f", "sed -s -i s/a/b/ f", "sed --in-place s/a/b/ f",
    "sed --in-pl s/a/b/ f", "sed --expr='w x' f", "sed p f -i"]
    .map((command) => notAllowed(["exec(sed:*)"], command)),
  ...["awk 'BEGIN{system(\"touch X\")}'", "awk '{print > \"x\"}' f", "awk '{print >> \"x\"}' f", "awk '{printf \"%s\", $0 > \"x\"}' f",
    "awk '{print | \"sh\"}' f", "awk 'BEGIN{\"touch X\" | getline}'", "awk 'BEGIN{while ((\"touch X\" |& getline) > 0) x}'",
    "awk -f prog.awk f", "awk '@load \"x\"; BEGIN{}'", "awk -i inplace '{print}' f", "awk -e 'BEGIN{system(\"x\")}'"]
    .map((command) => notAllowed(["exec(awk:*)"], command)),
  notAllowed(["exec(gawk:*)"], "gawk 'BEGIN{system(\"touch X\")}'"),
  ...["tar -xf a.tar", "tar xf a.tar", "tar -cf out.tar .", "tar -tf a.tar --to-command='touch X'", "tar -I 'touch X' -tf a.tar",
    "tar --use-compress-program='touch X' -tf a.tar", "tar -tf a.tar --checkpoint=1 --checkpoint-action=exec='touch X'",
    "tar -tf host:a.tar", "tar --extract -f a.tar", "tar -tvf a.tar -F x", "tar -t -f a.tar --index-file=x",
    "tar tfx a.tar", "tar -tf a.tar --to-com='touch X'"]
    .map((command) => notAllowed(["exec(tar:*)"], command)),
  ...["rsync -e 'sh -c touch' a b:c", "rsync --rsh='touch X' a b:c", "rsync --rsync-path='touch X' a b:c", "rsync -avze 'touch X' a b:c"]
    .map((command) => notAllowed(["exec(rsync:*)"], command)),
  notAllowed(["exec(echo:*)", "exec(xargs:*)"], "echo X | xargs touch"),
  notAllowed(["exec(echo:*)", "exec(xargs:*)"], "echo X | xargs echo"),
  // wrappers: what they run is what is allowed, and some are never allowed through
  notAllowed(["exec(git status:*)"], "sudo git status"),
  notAllowed(["exec(git diff:*)"], "env GIT_EXTERNAL_DIFF=x git diff"),
  notAllowed(["exec(git status:*)"], "env -S 'touch X' git status"),
  notAllowed(["exec(git status:*)"], "time -o /tmp/x git status"),
  notAllowed(["exec(git status:*)"], "nice -n 5 git -c core.fsmonitor=x status"),
  notAllowed(["exec(env:*)"], "env touch X"),
  notAllowed(["exec(timeout:*)"], "timeout 5 touch X"),
  notAllowed(["exec(eval:*)"], "eval echo hi"),
  notAllowed(["exec(bash:*)"], "bash -c 'touch X'"),
  notAllowed(["exec(bash:*)"], "bash -o pipefail -c 'touch X'"),
  notAllowed(["exec(sort:*)"], "sort --out=/tmp/x f"),
  notAllowed(["exec(export:*)", "exec(git diff:*)"], "export GIT_EXTERNAL_DIFF=./x; git diff"),
  notAllowed(["exec(printf:*)"], "printf -v 'a[$(touch X)]' %s y"),
  notAllowed(["exec(sleep:*)", "exec(wait:*)"], "sleep 1 & wait -n -p 'a[$(touch X)]'"),
  notAllowed(["exec(test:*)"], "test -v 'a[$(touch X)]'"),
  notAllowed(["exec(git status:*)"], "./git status"),
  notAllowed(["exec(git status:*)"], "/tmp/git status")
]

/** Everyday commands the rules still allow. */
const stillAllowed: ReadonlyArray<Row> = [
  allowed(["exec(git status:*)"], "git status"),
  allowed(["exec(git status:*)"], "git status --short"),
  allowed(["exec(git diff:*)"], "git diff --stat HEAD~1"),
  allowed(["exec(git diff:*)"], "git diff -- src/a.ts"),
  allowed(["exec(git diff:*)"], "git diff main...HEAD -- docs"),
  allowed(["exec(git diff:*)"], "git --no-pager diff"),
  allowed(["exec(git log:*)"], "git log --oneline -n 5"),
  allowed(["exec(git diff:*)"], "git diff --text --stat"),
  allowed(["exec(find:*)"], "find . -name '*.ts' -type f"),
  allowed(["exec(find:*)"], "find src -newer package.json -print"),
  allowed(["exec(sed:*)"], "sed -n '1,20p' README.md"),
  allowed(["exec(sed:*)"], "sed 's/a/b/g' f"),
  allowed(["exec(sed:*)"], "sed -e 's/a/b/' -e '/x/d' f"),
  allowed(["exec(sed:*)"], "sed -n '/start/,/end/{p;}' f"),
  allowed(["exec(sed:*)"], "sed -E 's/([0-9]+)-x/\\1/I' f"),
  // sed joins `-e` scripts with newlines: `w x` is the text `a\` appends
  allowed(["exec(sed:*)"], "sed -e 'a\\' -e 'w x' f"),
  allowed(["exec(awk:*)"], "awk '{print $1}' f"),
  allowed(["exec(awk:*)"], "awk -F: '$3 > 100 {print $1}' /etc/passwd"),
  allowed(["exec(tar:*)"], "tar -tzf a.tgz"),
  allowed(["exec(tar:*)"], "tar tvf a.tar"),
  allowed(["exec(npm test:*)"], "nice -n 10 npm test"),
  allowed(["exec(npm test:*)"], "timeout 60 npm test"),
  allowed(["exec(npm test:*)"], "time npm test"),
  allowed(["exec(echo:*)"], "echo hi 2>&1 >/dev/null"),
  allowed(["exec(npm test:*)", "exec(tail:*)"], "npm test 2>&1 | tail -n 20"),
  allowed(["exec(ls:*)"], "ls -la ./*.ts src/*.ts"),
  allowed(["exec(cat:*)"], "cat 'a b.txt'"),
  allowed(["exec(grep:*)"], "grep -rn \"it's\" src"),
  allowed(["exec(git diff:*)", "exec(echo:*)"], "if git diff --quiet; then echo clean; fi"),
  allowed(["exec(cd:*)", "exec(git diff:*)"], "cd src && git diff HEAD -- a.ts"),
  allowed(["exec(git clone:*)"], "git clone https://example.com/x.git vendor/x"),
  allowed(["exec(echo:*)"], "echo x > '/dev/null'"),
  allowed(["exec(git status:*)"], "command git status"),
  allowed(["exec(command -v:*)"], "command -v git")
]

describe("shell rules against hostile commands", () => {
  it.each(reported)("reported bypass: %j", (row) => check(row))
  it.each(pastDeny)("deny rules see it: %j", (row) => check(row))
  it.each(pastDenyWords)("deny rules see it: %j", (row) => check(row))
  it.each(notOverDenied)("deny rules leave arguments alone: %j", (row) => check(row))
  it.each(pastAllow)("allow rules do not approve it: %j", (row) => check(row))
  it.each(stillAllowed)("still allowed: %j", (row) => check(row))
})

const context = { turnId: "t", sessionKey: "s", iteration: 1, depth: 0 }
const execCall = (command: string): Hook.HookToolCall => ({ id: "c1", name: "exec", arguments: { command }, readOnly: false, requiresApproval: true })

/** The approval hook's decision for one call, with the policy and rules given. */
const decide = (policy: "approve" | "deny", lists: Lists, command: string) =>
  Effect.gen(function*() {
    const screen = Screen.make({ stdout: { write: () => true }, stderr: { write: () => true }, stdinIsTTY: false, env: { NO_COLOR: "1" } })
    const hook = approvalHook({ policy, screen, ask: undefined, permissions: Permissions.make(rules(lists), ws, undefined) })
    const before = hook.beforeTool!({ context, call: execCall(command) })
    const early = Effect.isEffect(before) ? yield* (before as Effect.Effect<unknown>) : before
    if (early !== undefined) return (early as { _tag: string })._tag
    const approved = hook.approveTool!({ context, call: execCall(command) })
    return ((Effect.isEffect(approved) ? yield* (approved as Effect.Effect<unknown>) : approved) as { _tag: string })._tag
  })

describe("end to end through the approval hook", () => {
  it.effect("--yes approves an unsure command unless a deny rule could match one of its words", () =>
    Effect.gen(function*() {
      for (const row of reported.filter((r) => r.expected === "deny")) {
        expect(yield* decide("approve", row.rules, row.command), JSON.stringify(row.command)).toBe("Deny")
      }
      expect(yield* decide("approve", { deny: ["Bash(touch:*)"] }, "cat <<EOF\nhi\nEOF")).toBe("Approve")
    }))

  it.effect("allow rules never approve what they must not: the approval mode decides (here: deny)", () =>
    Effect.gen(function*() {
      for (const row of reported.filter((r) => r.expected === "not allowed")) {
        expect(yield* decide("deny", row.rules, row.command), JSON.stringify(row.command)).toBe("Deny")
      }
      expect(yield* decide("deny", { allow: ["exec(git status:*)"] }, "git status")).toBe("Approve")
    }))
})
