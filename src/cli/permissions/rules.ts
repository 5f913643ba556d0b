/**
 * Permission rules in Claude Code's syntax: `Tool` or `Tool(specifier)`, in `allow`, `ask` and
 * `deny` lists. Tools are named as agent-loop names them (`exec`, `read_file`, `server__tool`) or
 * as Claude Code does (`Bash`, `Read`, `Write`, `Edit`, `MultiEdit`, `Grep`, `LS`, `Glob`,
 * `mcp__server__tool`), so a Claude Code rule list works unchanged. As there, Claude Code's file
 * rules cover every tool that touches the path: `Read` names `read_file`, `grep`, `glob` and
 * `list_dir`; `Edit`, `Write` and `MultiEdit` name `write_file` and `edit_file`. agent-loop's own
 * names (`read_file(...)`) name one tool each.
 *
 * - `exec(npm test:*)` matches a command whose words start with `npm test`; `exec(git *)` is a
 *   glob over the command's words; `exec(npm test)` is that command exactly. A compound command
 *   is matched part by part (see `shellWords.ts`).
 * - `read_file(src/**)`, `edit_file(docs/**)`: a glob on the path, from the workspace root (`/x`
 *   and `./x` too); a pattern without `/` (`.env`, `*.pem`) matches a file of that name anywhere;
 *   `//abs/path` is absolute and `~/x` is under the home directory.
 * - `web_fetch(domain:example.com)` (Claude Code's `WebFetch(domain:…)`): a URL whose host is that
 *   name (an IP address in any spelling URLs allow: `domain:0x7f.1` is 127.0.0.1);
 *   `domain:*.example.com` is a glob on it. An allow rule the user wrote naming the host itself, no
 *   glob, also lets `web_fetch` reach that host at a private or loopback address (`reachesPrivate`).
 * - `mcp__github`, `mcp__github__*`, `github__search_*`: MCP tools, by server or by name glob.
 *
 * `Task` names the sub-agent tool (`subagent`). Rules naming a tool agent-loop does not have
 * (`TodoWrite`) are kept and never match.
 */
import * as os from "node:os"
import * as Data from "effect/Data"
import * as nodePath from "node:path"
import type { McpOrigin } from "../../domain/Tool.ts"
import { CLAUDE_ALIASES } from "../../layers/claudeHooks/names.ts"
import { evaluateCommand, suggestCommand } from "./commandRules.ts"
import { pathMatch, starMatch } from "./glob.ts"

/** Which list a rule is in. */
export type RuleKind = "allow" | "ask" | "deny"

/** The source of the rules the user allows at the approval prompt, for the rest of the process. */
export const SESSION_SOURCE = "this session"


const BUILTINS = new Set(["exec", "read_file", "write_file", "edit_file", "grep", "glob", "list_dir", "web_fetch"])
const PATH_TOOLS = new Set(["read_file", "write_file", "edit_file", "grep", "glob", "list_dir"])

/** Claude Code's file rules, and the built-in tools each covers: every one that touches the path. */
const FILE_RULE_TOOLS: Readonly<Record<string, ReadonlyArray<string>>> = {
  Read: ["read_file", "grep", "glob", "list_dir"],
  Edit: ["write_file", "edit_file"],
  Write: ["write_file", "edit_file"],
  MultiEdit: ["write_file", "edit_file"]
}

/** What a rule's tool part names. */
export type ToolPattern =
  | { readonly _tag: "Builtin"; readonly names: ReadonlyArray<string> }
  | { readonly _tag: "Mcp"; readonly glob: string }
  | { readonly _tag: "Unknown"; readonly name: string }

/** A parsed rule. */
export interface Rule {
  readonly kind: RuleKind
  /** As written. */
  readonly text: string
  /** Where it came from: a settings file, `--allow`, `--deny`, or `this session`. */
  readonly source: string
  readonly tool: ToolPattern
  readonly specifier: string | undefined
}

/** A rule that cannot be read: why. */
export class RuleError extends Data.TaggedError("RuleError")<{ readonly text: string; readonly message: string }> {}

const toolPattern = (name: string): ToolPattern => {
  if (Object.hasOwn(FILE_RULE_TOOLS, name)) return { _tag: "Builtin", names: FILE_RULE_TOOLS[name]! }
  const builtin = CLAUDE_ALIASES[name] ?? (BUILTINS.has(name) ? name : undefined)
  if (builtin !== undefined) return { _tag: "Builtin", names: [builtin] }
  if (name.startsWith("mcp__")) {
    const rest = name.slice("mcp__".length)
    return { _tag: "Mcp", glob: rest.includes("__") ? rest : `${rest}__*` }
  }
  if (name.includes("__") && !name.startsWith("_")) return { _tag: "Mcp", glob: name }
  return { _tag: "Unknown", name }
}

/** Parses one rule; `source` says where it was written. */
export const parseRule = (text: string, kind: RuleKind, source: string): Rule | RuleError => {
  const trimmed = text.trim()
  const open = trimmed.indexOf("(")
  if (open < 0) {
    if (trimmed === "" || /[\s)]/.test(trimmed)) return new RuleError({ text, message: "expected Tool or Tool(specifier)" })
    return { kind, text: trimmed, source, tool: toolPattern(trimmed), specifier: undefined }
  }
  if (!trimmed.endsWith(")")) return new RuleError({ text, message: "expected Tool(specifier): the ( is not closed by a final )" })
  const name = trimmed.slice(0, open).trim()
  if (name === "") return new RuleError({ text, message: "no tool name before (" })
  const specifier = trimmed.slice(open + 1, -1).trim()
  return { kind, text: trimmed, source, tool: toolPattern(name), specifier: specifier === "" || specifier === "*" ? undefined : specifier }
}

/** Where a path argument points: relative to the workspace (when inside it) and absolute. */
interface Where {
  readonly relative: ReadonlyArray<string> | undefined
  readonly absolute: ReadonlyArray<string>
}

const segments = (path: string): ReadonlyArray<string> => path.split("/").filter((s) => s !== "" && s !== ".")

const whereOf = (path: string, workspace: string): Where => {
  const absolute = nodePath.posix.resolve(workspace, path.replaceAll("\\", "/"))
  const relative = nodePath.posix.relative(workspace, absolute)
  const inside = relative === "" || (relative !== ".." && !relative.startsWith("../"))
  return { relative: inside ? segments(relative) : undefined, absolute: segments(absolute) }
}

/** Whether a path rule's specifier matches the path (see the module doc). */
export const pathMatches = (specifier: string | undefined, where: Where, home: string = os.homedir()): boolean => {
  if (specifier === undefined) return true
  let pattern = specifier.endsWith("/") ? `${specifier}**` : specifier
  if (pattern.startsWith("//")) return pathMatch(segments(pattern.slice(1)), where.absolute)
  if (pattern.startsWith("~/")) return pathMatch([...segments(home), ...segments(pattern.slice(2))], where.absolute)
  if (where.relative === undefined) return false
  const anchored = pattern.startsWith("./") || pattern.startsWith("/") || pattern.slice(0, -1).includes("/")
  if (pattern.startsWith("./")) pattern = pattern.slice(2)
  const parts = segments(pattern)
  return pathMatch(anchored ? parts : ["**", ...parts], where.relative)
}

/** A tool call as rules see it. */
export interface RuleCall {
  readonly name: string
  readonly arguments: unknown
  /** For an MCP tool, its server and its name there: rules name it by these, whatever it is registered as. */
  readonly mcp?: McpOrigin | undefined
}

/** The `server__tool` name MCP rules match an MCP tool's calls by. */
const mcpName = (origin: McpOrigin): string => `${origin.server}__${origin.tool}`

const argument = (args: unknown, field: string): unknown =>
  typeof args === "object" && args !== null ? (args as Record<string, unknown>)[field] : undefined

/** The path a file tool's call names (`.` for grep, glob and list_dir without one). */
export const pathOf = (call: RuleCall): string | undefined => {
  const path = argument(call.arguments, "path")
  if (typeof path === "string") return path
  return call.name === "grep" || call.name === "glob" || call.name === "list_dir" ? "." : undefined
}

/** The host of a `web_fetch` call's URL, lower case, without the brackets of an IPv6 address. */
export const hostOf = (call: RuleCall): string | undefined => {
  const url = argument(call.arguments, "url")
  if (typeof url !== "string" || !URL.canParse(url)) return undefined
  return new URL(url).hostname.toLowerCase().replace(/^\[(.*)\]$/, "$1")
}

/**
 * A host as a URL's `hostname` gives it (see `hostOf`): lower case, an IPv4 address in dotted
 * decimal whatever its spelling (`2130706433`, `0x7f.1`), an IPv6 address compressed and without
 * brackets. Text no URL could hold is only lowered.
 */
export const canonicalHost = (text: string): string => {
  const spelled = text.includes(":") && !text.startsWith("[") ? `[${text}]` : text
  const url = `http://${spelled}/`
  return URL.canParse(url) ? new URL(url).hostname.replace(/^\[(.*)\]$/, "$1") : text.toLowerCase()
}

const DOMAIN = "domain:"

/** Whether a `web_fetch` rule's specifier matches `host` (from `hostOf`): a glob, or one host in any spelling. */
const domainMatches = (specifier: string, host: string): boolean => {
  if (!specifier.startsWith(DOMAIN)) return false
  const pattern = specifier.slice(DOMAIN.length)
  return /[*?]/.test(pattern) ? starMatch(pattern.toLowerCase(), host) : canonicalHost(pattern) === host
}

/** The one host a `web_fetch` rule names, canonical; `undefined` for a glob, or a rule naming none. */
const literalHost = (rule: Rule): string | undefined => {
  const pattern = rule.specifier?.startsWith(DOMAIN) ? rule.specifier.slice(DOMAIN.length) : ""
  return pattern === "" || /[*?]/.test(pattern) ? undefined : canonicalHost(pattern)
}

/** The command of an `exec` call. */
export const commandOf = (call: RuleCall): string | undefined => {
  const command = argument(call.arguments, "command")
  return typeof command === "string" ? command : undefined
}

/**
 * Whether `rule` names the tool of `call` (its specifier aside). An MCP tool is named by its server
 * and its own name (`mcp__github__create_issue`) even when it is registered under its plain name,
 * and never by a built-in's rule.
 */
export const namesTool = (rule: Rule, call: Pick<RuleCall, "name" | "mcp">): boolean => {
  const { mcp, name } = call
  switch (rule.tool._tag) {
    case "Builtin":
      return mcp === undefined && rule.tool.names.includes(name)
    case "Mcp":
      return mcp === undefined ? starMatch(rule.tool.glob, name) : starMatch(rule.tool.glob, mcpName(mcp)) || starMatch(rule.tool.glob, name)
    case "Unknown":
      return false
  }
}

/**
 * Whether `rule` matches a call of a tool that is not `exec` (for `exec`, see `commandMatches`
 * and `evaluate`).
 */
export const matchesCall = (rule: Rule, call: RuleCall, workspace: string): boolean => {
  if (!namesTool(rule, call)) return false
  if (rule.specifier === undefined || rule.tool._tag !== "Builtin") return true
  if (call.mcp === undefined && call.name === "web_fetch") {
    const host = hostOf(call)
    return host !== undefined && domainMatches(rule.specifier, host)
  }
  if (!PATH_TOOLS.has(call.name)) return false
  const path = pathOf(call)
  return path !== undefined && pathMatches(rule.specifier, whereOf(path, workspace))
}

/** What the rules say of a call. */
export type Verdict =
  | { readonly _tag: "Deny"; readonly rule: Rule }
  | { readonly _tag: "Ask"; readonly rule: Rule }
  | { readonly _tag: "Allow"; readonly rules: ReadonlyArray<Rule> }
  /** No rule decides; `why` says why allow rules could not (a compound part not covered, an unreadable command). */
  | { readonly _tag: "None"; readonly why?: string }

const first = (rules: ReadonlyArray<Rule>, kind: RuleKind, test: (rule: Rule) => boolean) =>
  rules.find((rule) => rule.kind === kind && test(rule))

/**
 * What `rules` say of `call`: deny beats ask beats allow. An `exec` command is read as `sh` reads
 * it and judged by `commandRules.evaluateCommand`: deny and ask rules look through wrappers and,
 * where the words cannot be placed, at every word; allow rules approve only a command the reader
 * is sure of, whose every part they match and none of whose parts writes files or runs code
 * through its options. Under `--yes` a command no rule decides runs (see `commandRules.ts`).
 */
export const evaluate = (rules: ReadonlyArray<Rule>, call: RuleCall, workspace: string): Verdict => {
  const command = call.mcp === undefined && call.name === "exec" ? commandOf(call) : undefined
  if (command !== undefined) return evaluateCommand(rules.filter((rule) => namesTool(rule, { name: "exec" })), command, workspace)
  const deny = first(rules, "deny", (rule) => matchesCall(rule, call, workspace))
  if (deny) return { _tag: "Deny", rule: deny }
  const ask = first(rules, "ask", (rule) => matchesCall(rule, call, workspace))
  if (ask) return { _tag: "Ask", rule: ask }
  const allow = first(rules, "allow", (rule) => matchesCall(rule, call, workspace))
  return allow ? { _tag: "Allow", rules: [allow] } : { _tag: "None" }
}

/**
 * Whether `web_fetch` may reach `host` (as `hostOf` gives it) at a loopback, private or link-local
 * address. Only when the rules allow fetching from it and one of the allow rules names the host
 * itself: no glob (`domain:*`, `domain:127.0.0.*` and `domain:*.internal` unlock nothing), and not a
 * rule allowed at the approval prompt (`SESSION_SOURCE`), since the name may have resolved to a
 * public address when the user said yes and to 127.0.0.1 since (DNS rebinding). `web_fetch`
 * checks the address it connects to on every fetch and every redirect, so this is asked each time.
 */
export const reachesPrivate = (rules: ReadonlyArray<Rule>, host: string, workspace: string): boolean => {
  const call: RuleCall = { name: "web_fetch", arguments: { url: `http://${host.includes(":") ? `[${host}]` : host}/` } }
  if (evaluate(rules, call, workspace)._tag !== "Allow") return false
  const wanted = canonicalHost(host)
  return rules.some((rule) => rule.kind === "allow" && rule.source !== SESSION_SOURCE && namesTool(rule, call) && literalHost(rule) === wanted)
}

/**
 * Rules (in agent-loop's names) that would allow `call` from now on, for the approval prompt's
 * "allow for the session" and "save": for `exec`, one `exec(WORDS:*)` per part not yet allowed
 * (see `commandRules.suggestCommand`); for other tools, the tool's name. None when no rule could.
 */
export const suggest = (rules: ReadonlyArray<Rule>, call: RuleCall, workspace: string): ReadonlyArray<string> => {
  if (call.mcp !== undefined) return [`mcp__${mcpName(call.mcp)}`]
  if (call.mcp === undefined && call.name === "web_fetch") {
    const host = hostOf(call)
    return host === undefined ? [] : [`web_fetch(domain:${host})`]
  }
  if (call.name !== "exec") return [call.name]
  const command = commandOf(call)
  return command === undefined ? [] : suggestCommand(rules.filter((rule) => namesTool(rule, { name: "exec" })), command, workspace)
}
