/**
 * Permission rules: the shell-word reader that splits an `exec` command into its simple commands,
 * the globs, and what allow/ask/deny rules (agent-loop's and Claude Code's names) decide.
 */
import { describe, expect, it } from "@effect/vitest"
import { pathMatch, starMatch } from "../../src/cli/permissions/glob.ts"
import { evaluate, parseRule, type Rule, RuleError, type RuleKind, suggest } from "../../src/cli/permissions/rules.ts"
import { read, SUBSTITUTION } from "../../src/cli/permissions/shellWords.ts"
import { type RuleLists, ruleList } from "../support/rules.ts"

const words = (command: string) => {
  const reading = read(command)
  return reading._tag === "Commands" ? reading.commands.map((c) => c.words.join(" ")) : reading.reason
}

const rules = (lists: RuleLists): ReadonlyArray<Rule> => ruleList(lists, "test")

const ws = "/home/u/project"
const exec = (command: string) => ({ name: "exec", arguments: { command } })
const verdictOf = (lists: Partial<Record<RuleKind, ReadonlyArray<string>>>, call: { name: string; arguments: unknown; mcp?: { server: string; tool: string } }) => {
  const verdict = evaluate(rules(lists), call, ws)
  return verdict._tag === "Deny" || verdict._tag === "Ask" ? `${verdict._tag}:${verdict.rule.text}` : verdict._tag
}

describe("shell words", () => {
  it("splits compound commands at every operator, and reads into substitutions", () => {
    expect(words("git diff --stat")).toEqual(["git diff --stat"])
    expect(words("a && b || c; d | e & f\ng")).toEqual(["a", "b", "c", "d", "e", "f", "g"])
    expect(words("echo $(rm -rf /) done")).toEqual(["rm -rf /", `echo ${SUBSTITUTION} done`])
    expect(words("echo `touch x`")).toEqual(["touch x", `echo ${SUBSTITUTION}`])
    expect(words("echo \"a $(id) b\"")).toEqual(["id", `echo a ${SUBSTITUTION} b`])
    expect(words("(cd x; make)")).toEqual(["cd x", "make"])
  })

  it("splits words at space and tab only, as sh does; # starts a comment only at a word's start", () => {
    expect(words("git status\r#; touch X")).toEqual(["git status\r#", "touch X"])
    for (const blank of ["\u000b", "\f", "\u00a0", "\u2003", "\u3000"]) expect(words(`a${blank}b c`)).toEqual([`a${blank}b c`])
    expect(words("a\tb #c; d\ne")).toEqual(["a b", "e"])
    expect(words("echo a#b '#c' \\#d")).toEqual(["echo a#b #c #d"])
    expect(read("a\u0000b")).toEqual({ _tag: "Opaque", reason: "a NUL character" })
  })

  it("notes what the shell expands in a word: values, globs, and what may become an option", () => {
    const details = (command: string) => {
      const reading = read(command)
      return reading._tag === "Commands" ? reading.commands[0]!.details.map(({ dynamic, leading, pattern }) => ({ dynamic, pattern, leading })) : reading.reason
    }
    const plain = { dynamic: false, pattern: false, leading: false }
    expect(details("ls '*' src/*.ts *.md [ ] -x*")).toEqual([
      plain, plain, { ...plain, pattern: true }, { ...plain, pattern: true, leading: true }, plain, plain, { ...plain, pattern: true, leading: true }
    ])
    expect(details("echo $x a$x {a,b} {} \"$y\"")).toEqual([
      plain, { ...plain, dynamic: true, leading: true }, { ...plain, dynamic: true }, { ...plain, pattern: true, leading: true }, plain, { ...plain, dynamic: true, leading: true }
    ])
  })

  it("removes quotes and escapes, keeps quoted operators as text", () => {
    expect(words("echo 'a;b' \"c&&d\" e\\;f")).toEqual(["echo a;b c&&d e;f"])
    expect(words("grep -n \"it's\" src # a comment; rm -rf /")).toEqual(["grep -n it's src"])
  })

  it("notes redirections to files, not to descriptors or /dev/null", () => {
    const reading = read("make 2>&1 >/dev/null; echo hi > out.txt; >&log.txt; echo 2>&1x")
    expect(reading._tag === "Commands" && reading.commands.map(({ words, writesFile }) => ({ words, writesFile }))).toEqual([
      { words: ["make"], writesFile: false },
      { words: ["echo", "hi"], writesFile: true },
      { words: [], writesFile: true },
      { words: ["echo"], writesFile: true }
    ])
  })

  it("is opaque for what it does not follow", () => {
    expect(read("cat <<EOF\nx\nEOF")._tag).toBe("Opaque")
    expect(read("echo 'unterminated")._tag).toBe("Opaque")
    expect(read("echo $((1+2))")._tag).toBe("Opaque")
    expect(read("diff <(ls a) <(ls b)")).toEqual({ _tag: "Opaque", reason: "process substitution" })
    expect(read("echo $(echo")._tag).toBe("Opaque")
    expect(read("$(".repeat(40) + ")".repeat(40))._tag).toBe("Opaque")
    // nesting is read up to its bound, and no deeper
    expect(read("$(".repeat(16) + "id" + ")".repeat(16))._tag).toBe("Commands")
    expect(read("$(".repeat(17) + "id" + ")".repeat(17))).toEqual({ _tag: "Opaque", reason: "substitutions nest too deep" })
  })
})

describe("globs", () => {
  it("matches stars and double stars", () => {
    expect(starMatch("github__search_*", "github__search_issues")).toBe(true)
    expect(starMatch("github__search_*", "github__create_issue")).toBe(false)
    expect(starMatch("a*b*c", "axxbyyc")).toBe(true)
    expect(starMatch("a*b*c", "axxbyy")).toBe(false)
    expect(pathMatch(["src", "**"], ["src", "a", "b.ts"])).toBe(true)
    expect(pathMatch(["src", "**"], ["test", "a.ts"])).toBe(false)
    expect(pathMatch(["**", "*.pem"], ["keys", "x.pem"])).toBe(true)
    expect(pathMatch(["**", "a", "**", "b"], ["x", "a", "y", "z", "b"])).toBe(true)
  })
})

describe("permission rules", () => {
  it("reads Claude Code's tool names as aliases", () => {
    expect(verdictOf({ allow: ["Bash(npm test:*)"] }, exec("npm test -- --watch=false"))).toBe("Allow")
    expect(verdictOf({ deny: ["Read(.env)"] }, { name: "read_file", arguments: { path: "config/.env" } })).toBe("Deny:Read(.env)")
    expect(verdictOf({ allow: ["Edit(docs/**)"] }, { name: "edit_file", arguments: { path: "docs/a.md" } })).toBe("Allow")
    expect(verdictOf({ deny: ["Read(./.env)"] }, { name: "read_file", arguments: { path: ".env" } })).toBe("Deny:Read(./.env)")
    expect(verdictOf({ deny: ["Read(./.env)"] }, { name: "read_file", arguments: { path: "sub/.env" } })).toBe("None")
    expect(verdictOf({ deny: ["Read(//etc/**)"] }, { name: "read_file", arguments: { path: "/etc/passwd" } })).toBe("Deny:Read(//etc/**)")
    expect(verdictOf({ deny: ["Read(secrets/)"] }, { name: "read_file", arguments: { path: "secrets/a/b" } })).toBe("Deny:Read(secrets/)")
    expect(verdictOf({ allow: ["Edit(docs/**)"] }, { name: "edit_file", arguments: { path: "src/a.ts" } })).toBe("None")
    expect(verdictOf({ allow: ["Edit(docs/**)"] }, { name: "edit_file", arguments: { path: "docs/../src/a.ts" } })).toBe("None")
    expect(verdictOf({ allow: ["mcp__github"] }, { name: "github__create_issue", arguments: {} })).toBe("Allow")
    expect(verdictOf({ allow: ["mcp__github__search_issues"] }, { name: "github__create_issue", arguments: {} })).toBe("None")
    expect(verdictOf({ allow: ["github__search_*"] }, { name: "github__search_code", arguments: {} })).toBe("Allow")
    expect(verdictOf({ allow: ["WebFetch(domain:example.com)"] }, exec("curl example.com"))).toBe("None")
  })

  it("names an MCP tool by its server and own name, whatever name it is registered under", () => {
    // two servers' tools are registered under their plain names when nothing else has them
    const plain = { name: "create_issue", arguments: {}, mcp: { server: "github", tool: "create_issue" } }
    expect(verdictOf({ deny: ["mcp__github__create_issue"] }, plain)).toBe("Deny:mcp__github__create_issue")
    expect(verdictOf({ deny: ["mcp__github"] }, plain)).toBe("Deny:mcp__github")
    expect(verdictOf({ deny: ["github__*"] }, plain)).toBe("Deny:github__*")
    expect(verdictOf({ deny: ["mcp__gitlab"] }, plain)).toBe("None")
    // a built-in's rule never names an MCP tool that happens to share its name
    const lookalike = { name: "read_file", arguments: { path: "a" }, mcp: { server: "files", tool: "read_file" } }
    expect(verdictOf({ allow: ["Read"] }, lookalike)).toBe("None")
    expect(verdictOf({ allow: ["exec"] }, { name: "exec", arguments: { command: "ls" }, mcp: { server: "sh", tool: "exec" } })).toBe("None")
    expect(suggest([], plain, ws)).toEqual(["mcp__github__create_issue"])
    expect(verdictOf({ allow: suggest([], plain, ws) }, plain)).toBe("Allow")
  })

  it("deny beats ask beats allow", () => {
    const lists = { allow: ["exec"], ask: ["exec(git push:*)"], deny: ["exec(git push --force:*)"] }
    expect(verdictOf(lists, exec("git status"))).toBe("Allow")
    expect(verdictOf(lists, exec("git push origin main"))).toBe("Ask:exec(git push:*)")
    expect(verdictOf(lists, exec("git push --force origin main"))).toBe("Deny:exec(git push --force:*)")
  })

  it("allows a compound command only when every part is allowed", () => {
    const lists = { allow: ["exec(git status:*)", "exec(git diff:*)"], deny: ["exec(rm:*)"] }
    expect(verdictOf(lists, exec("git status && git diff HEAD"))).toBe("Allow")
    expect(verdictOf(lists, exec("git status ; touch PWNED"))).toBe("None")
    expect(verdictOf(lists, exec("git status | sh"))).toBe("None")
    expect(verdictOf(lists, exec("git diff $(touch PWNED)"))).toBe("None")
    expect(verdictOf(lists, exec("git diff `touch PWNED`"))).toBe("None")
    expect(verdictOf(lists, exec("git status > ~/.bashrc"))).toBe("None")
    expect(verdictOf(lists, exec("git status; rm -rf /"))).toBe("Deny:exec(rm:*)")
    expect(verdictOf(lists, exec("git status && echo $(rm -rf ~)"))).toBe("Deny:exec(rm:*)")
    expect(verdictOf(lists, exec("rm -rf / <<EOF"))).toBe("Deny:exec(rm:*)")
    expect(verdictOf(lists, exec("git statusx"))).toBe("None")
  })

  it("rejects rules it cannot read", () => {
    expect(parseRule("Bash(npm test", "allow", "x")).toBeInstanceOf(RuleError)
    expect(parseRule("", "allow", "x")).toBeInstanceOf(RuleError)
  })

  it("matches web_fetch calls by the domain of their URL, in either tool name", () => {
    const fetch = (url: string) => ({ name: "web_fetch", arguments: { url } })
    expect(verdictOf({ allow: ["WebFetch(domain:example.com)"] }, fetch("https://example.com/a"))).toBe("Allow")
    expect(verdictOf({ allow: ["web_fetch(domain:example.com)"] }, fetch("https://EXAMPLE.com:8443/a"))).toBe("Allow")
    expect(verdictOf({ allow: ["web_fetch(domain:example.com)"] }, fetch("https://docs.example.com/"))).toBe("None")
    expect(verdictOf({ allow: ["web_fetch(domain:example.com)"] }, fetch("https://example.com.evil.test/"))).toBe("None")
    expect(verdictOf({ allow: ["web_fetch(domain:*.example.com)"] }, fetch("https://docs.example.com/"))).toBe("Allow")
    expect(verdictOf({ allow: ["web_fetch(domain:::1)"] }, fetch("http://[::1]:8080/"))).toBe("Allow")
    expect(verdictOf({ allow: ["web_fetch(example.com)"] }, fetch("https://example.com/"))).toBe("None")
    expect(verdictOf({ allow: ["web_fetch(domain:example.com)"] }, fetch("not a url"))).toBe("None")
    expect(verdictOf({ deny: ["WebFetch"] }, fetch("https://example.com/"))).toBe("Deny:WebFetch")
    expect(suggest([], fetch("https://Docs.Example.com/x"), ws)).toEqual(["web_fetch(domain:docs.example.com)"])
  })

  it("suggests the rule to allow a call from now on", () => {
    expect(suggest([], exec("git diff --stat"), ws)).toEqual(["exec(git diff:*)"])
    expect(suggest([], exec("ls -la"), ws)).toEqual(["exec(ls:*)"])
    expect(suggest(rules({ allow: ["exec(git status:*)"] }), exec("git status && npm test"), ws)).toEqual(["exec(npm test:*)"])
    expect(suggest([], exec("echo hi > x"), ws)).toEqual([])
    expect(suggest([], exec("$(x) y"), ws)).toEqual([])
    expect(suggest([], { name: "github__create_issue", arguments: {} }, ws)).toEqual(["github__create_issue"])
  })

  // the test's timeout is the bound: a reading quadratic in a megabyte would take hours, a linear one
  // takes seconds (minutes on a machine loaded to many times its cores)
  it("reads a megabyte of hostile command text in linear time", () => {
    const hostiles = [
      "$(".repeat(10) + "a".repeat(1 << 20), "\"".repeat(1 << 20), "a ".repeat(1 << 19), ";".repeat(1 << 20),
      // wrappers in a row, globs the deny rules' scan reads, scripts of sed and awk, long options
      "nice ".repeat(1 << 18) + "touch", "env -i ".repeat(1 << 17), "echo $((1)); " + "[".repeat(1 << 20), "t[".repeat(1 << 19),
      "echo $((1)); " + "*?".repeat(1 << 19), "{a,".repeat(1 << 18), "git -c x ".repeat(1 << 17) + "status",
      "sed '" + "s/[[/".repeat(1 << 17) + "' f", "awk '" + "print |".repeat(1 << 17) + "'", "git diff " + "--o".repeat(1 << 18),
      "$'" + "\\x".repeat(1 << 18), "tar " + "t".repeat(1 << 20), "a=b ".repeat(1 << 18) + "touch"
    ]
    for (const hostile of hostiles) {
      expect(["Commands", "Opaque"]).toContain(read(hostile)._tag)
      expect(["None", "Allow", "Deny", "Ask"]).toContain(evaluate(rules({ allow: ["exec(a *)", "exec(sed:*)"], deny: ["exec(touch:*)", "exec(rm -rf /:*)"] }), exec(hostile), ws)._tag)
      expect(suggest([], exec(hostile), ws)).toBeInstanceOf(Array)
    }
  })
})

describe("permission rules look past what runs nothing itself", () => {
  it("deny rules see commands behind reserved words, assignments and wrappers; allow rules never allow assignments", () => {
    const lists = { allow: ["exec(echo:*)", "exec(npm test:*)", "exec(true)"], deny: ["exec(rm:*)"] }
    for (const command of ["{ rm -rf /; }", "if true; then rm -rf /; fi", "FOO=1 rm -rf /", "sudo rm -rf /", "env rm x", "! rm x", "ls | xargs rm"]) {
      expect(verdictOf(lists, exec(command))).toBe("Deny:exec(rm:*)")
    }
    expect(verdictOf(lists, exec("if true; then echo yes; fi"))).toBe("Allow")
    expect(verdictOf(lists, exec("LD_PRELOAD=/tmp/x.so npm test"))).toBe("None")
    expect(verdictOf(lists, exec("sudo npm test"))).toBe("None")
    expect(suggest([], exec("FOO=1 make"), ws)).toEqual([])
  })
})
