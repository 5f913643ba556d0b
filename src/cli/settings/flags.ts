/**
 * The flags of `run` and `chat`: which model, which session, which tools, and what to record.
 * Values missing on the command line fall back to the environment where noted.
 *
 * `--help` loads this module: it imports names and constants only (no provider, tool, settings or
 * store code), so that the help prints without loading what the commands run.
 */
import * as Config from "effect/Config"
import * as Flag from "effect/cli/Flag"
import * as AgentLoopConfig from "../../domain/Config.ts"
import { ReasoningEffort } from "../../domain/ModelOptions.ts"
import { BuiltinToolName } from "../../tools/builtinToolName.ts"
import { ApprovalPolicy, PERMISSION_MODES } from "../config/approvalPolicy.ts"
import { providerNames, providerSummaries } from "../providers/providerList.ts"
import { storeFlags } from "../sessions/storeFlags.ts"

/** The values of `--sandbox`. */
export const sandboxModes = ["auto", "on", "off"] as const

/**
 * The built-in tools enabled when neither `--tools` nor a settings file chooses: all of them, as in
 * Claude Code. `exec` still asks before each call (or is denied), and `web_fetch` before each new
 * host (a host said yes to is not asked about again in the session), never reaching a private or
 * loopback address without a rule naming its host.
 */
export const defaultTools: ReadonlyArray<BuiltinToolName> = BuiltinToolName.literals

/** `--provider` help: every provider with what it is, then `replay`. */
const providerHelp = [
  ...providerSummaries.map((provider) =>
    `${provider.name} (${provider.summary}${provider.keyVariables.length === 0 ? "" : `; key ${provider.keyVariables.join(" or ")}`})`
  ),
  "replay (needs --replay)"
].join(", ")

/** The loop's own defaults (any model will do), so that the help never repeats them by hand. */
const loopDefaults = AgentLoopConfig.makeUnsafe({ model: "any" })

/**
 * Sampling and reasoning, over the settings' `modelOptions`; their ranges are checked when the
 * flags are resolved (`settings.ts`), so a bad value fails with one line before anything starts.
 */
const modelOptionFlags = {
  temperature: Flag.Finite("temperature").pipe(Flag.optional, Flag.withDescription("Sampling temperature, 0–2 (Anthropic: 0–1; left out with thinking)")),
  topP: Flag.Finite("top-p").pipe(Flag.optional, Flag.withDescription("Nucleus sampling, 0–1")),
  stop: Flag.String("stop").pipe(
    Flag.atLeast(0),
    Flag.withDescription("A sequence that ends the answer (repeatable; not on openai-responses)")
  ),
  seed: Flag.Int("seed").pipe(Flag.optional, Flag.withDescription("Seed for best-effort deterministic sampling (OpenAI Chat Completions)")),
  maxTokens: Flag.Int("max-tokens").pipe(
    Flag.optional,
    Flag.withDescription("Most tokens per answer, thinking included (default: the model's limit on anthropic, the server's otherwise)")
  ),
  reasoningEffort: Flag.Literals("reasoning-effort", ReasoningEffort.literals).pipe(
    Flag.optional,
    Flag.withDescription("How hard a reasoning model thinks (OpenAI); on anthropic, thinking with a budget for that level; on gemini, its thinking level (Gemini 3) or a budget (2.x)")
  ),
  thinkingBudget: Flag.Int("thinking-budget").pipe(
    Flag.optional,
    Flag.withDescription("Tokens the model may think with: Anthropic extended thinking (at least 1024, less than --max-tokens), Gemini's thinking budget")
  )
}

/** The flags shared by `run` and `chat`. */
export const agentFlags = {
  provider: Flag.Literals("provider", providerNames).pipe(
    Flag.withFallbackConfig(Config.Literals(providerNames, "AGENT_LOOP_PROVIDER")),
    Flag.optional,
    Flag.withDescription(
      `${providerHelp}. Env AGENT_LOOP_PROVIDER; default the settings' "provider", else openai`
    )
  ),
  project: Flag.String("project").pipe(
    Flag.optional,
    Flag.withDescription("Google Cloud project of --provider vertex. Default env GOOGLE_CLOUD_PROJECT, then the settings' \"project\", else the credentials' own")
  ),
  location: Flag.String("location").pipe(
    Flag.optional,
    Flag.withDescription("Vertex AI region (us-east5, europe-west1, …) or global. Default env GOOGLE_CLOUD_LOCATION, then the settings' \"location\", else global")
  ),
  baseUrl: Flag.String("base-url").pipe(
    Flag.withFallbackConfig(Config.String("AGENT_LOOP_BASE_URL")),
    Flag.optional,
    Flag.withDescription(
      "Server URL, e.g. http://localhost:11434/v1 for Ollama (no key needed); the provider's own key goes to another host than its own only when --api-key-env names it. Env AGENT_LOOP_BASE_URL; default the settings' \"baseUrl\""
    )
  ),
  apiKeyEnv: Flag.String("api-key-env").pipe(
    Flag.optional,
    Flag.withDescription(
      "The variable the provider's key is read from, named to be sent wherever --base-url points (a provider's own variable, such as OPENAI_API_KEY, goes only to its own host); for vertex, GOOGLE_APPLICATION_CREDENTIALS sends the credentials of its file. Default the settings' \"apiKeyEnv\""
    )
  ),
  model: Flag.String("model").pipe(
    Flag.withAlias("m"),
    Flag.withFallbackConfig(Config.String("AGENT_LOOP_MODEL")),
    Flag.optional,
    Flag.withDescription("Model name, required here or in settings (agent-loop models lists the known ones). Env AGENT_LOOP_MODEL; default the settings' \"model\"; with --replay, the cassette's")
  ),
  system: Flag.String("system").pipe(
    Flag.withAlias("system-prompt"),
    Flag.optional,
    Flag.withDescription("System prompt instead of the settings' \"systemPrompt\" or the built-in one (context files are still added)")
  ),
  session: Flag.String("session").pipe(
    Flag.withAlias("s"),
    Flag.optional,
    Flag.withDescription("Session key to use or create (default: a new session)")
  ),
  continue: Flag.Boolean("continue").pipe(
    Flag.withAlias("c"),
    Flag.withDefault(false),
    Flag.withDescription("Continue the session used last in this workspace")
  ),
  resume: Flag.String("resume").pipe(
    Flag.withAlias("r"),
    Flag.withOptionalValue(""),
    Flag.optional,
    Flag.withDescription("Resume a saved session: --resume=KEY, or a bare --resume to pick one on a terminal (this workspace's first)")
  ),
  ephemeral: Flag.Boolean("ephemeral").pipe(
    Flag.withDefault(false),
    Flag.withDescription("Keep the session in memory only: nothing is saved")
  ),
  ...storeFlags,
  maxIterations: Flag.Int("max-iterations").pipe(
    Flag.withAlias("max-turns"),
    Flag.optional,
    Flag.withDescription(`Most model calls in one turn (default ${loopDefaults.maxIterations})`)
  ),
  tools: Flag.String("tools").pipe(
    Flag.optional,
    Flag.withDescription(
      `Comma-separated tools to enable: built-ins (${BuiltinToolName.literals.join(",")}) and MCP tools as ` +
        `server__tool or server__*; default ${defaultTools.join(",")} (or the settings' "tools") and every MCP tool; "" for none`
    )
  ),
  workspace: Flag.String("workspace").pipe(
    Flag.withAlias("w"),
    Flag.optional,
    Flag.withDescription("Directory the tools may touch and project hooks, settings and AGENTS.md come from (default: the current directory)")
  ),
  yes: Flag.Boolean("yes").pipe(
    Flag.withAlias("y"),
    Flag.withDefault(false),
    Flag.withDescription("Approve every tool call that needs approval (exec, MCP tools not marked read-only, file writes into protected locations) without asking: --approval approve")
  ),
  approval: Flag.Literals("approval", ApprovalPolicy.literals).pipe(
    Flag.optional,
    Flag.withDescription(
      "Calls that need approval (exec, MCP tools not marked read-only, file writes into protected locations: hooks, settings, MCP files, .git, editors' and shells' auto-run files such as .vscode/tasks.json or .envrc; deny rules of --deny and the settings first): ask on a terminal (denied without one), approve all, or deny all. Default ask, or the settings' \"approval\""
    )
  ),
  allow: Flag.String("allow").pipe(
    Flag.atLeast(0),
    Flag.withDescription("Allow calls matching a permission RULE without asking, e.g. 'exec(git diff:*)' or 'Read(src/**)' (repeatable; Claude Code syntax)")
  ),
  deny: Flag.String("deny").pipe(
    Flag.atLeast(0),
    Flag.withDescription("Deny calls matching a permission RULE, e.g. 'exec(git push:*)' (repeatable); deny rules hold even with --yes")
  ),
  allowedTools: Flag.String("allowedTools").pipe(
    Flag.atLeast(0),
    Flag.withDescription("Claude Code's: tools or rules allowed without asking, e.g. \"Bash(git log:*)\" Read (several words, commas or repeated); as --allow")
  ),
  disallowedTools: Flag.String("disallowedTools").pipe(
    Flag.atLeast(0),
    Flag.withDescription("Claude Code's: tools or rules denied, e.g. \"Bash(git push:*)\" WebFetch (several words, commas or repeated); as --deny")
  ),
  approvalTimeout: Flag.Int("approval-timeout").pipe(
    Flag.optional,
    Flag.withDescription("Seconds a question about a call waits for an answer (at a terminal, in an editor over ACP, in an MCP client by elicitation, over serve's API and A2A) before the call is denied (default 60, or the settings' approvalTimeout)")
  ),
  permissionMode: Flag.Literals("permission-mode", PERMISSION_MODES).pipe(
    Flag.optional,
    Flag.withDescription(
      "Claude Code's permission mode, over the settings' permissions.defaultMode: default and acceptEdits ask (edits in the workspace never ask here), plan lets the model only read until you accept its plan (in run, the plan is printed and the turn ends unless --yes accepts it), bypassPermissions approves every call (a warning says so; deny rules and the sandbox still hold), dontAsk denies what would ask"
    )
  ),
  dangerouslySkipPermissions: Flag.Boolean("dangerously-skip-permissions").pipe(
    Flag.withDefault(false),
    Flag.withDescription("Approve every call that needs approval, as --permission-mode bypassPermissions; deny rules and the sandbox still hold, and a warning says so")
  ),
  appendSystemPrompt: Flag.String("append-system-prompt").pipe(
    Flag.optional,
    Flag.withDescription("Text added at the end of the system prompt (after the context files)")
  ),
  addDir: Flag.String("add-dir").pipe(
    Flag.atLeast(0),
    Flag.withDescription("Another directory the file tools reach (by its path, under the same rules) and commands may write, as the settings' permissions.additionalDirectories (repeatable)")
  ),
  sandbox: Flag.Literals("sandbox", sandboxModes).pipe(
    Flag.optional,
    Flag.withDescription(
      "Run exec's commands in the operating system's sandbox (bubblewrap on Linux, sandbox-exec on macOS): they write only the workspace, read none of your credentials and reach only allowed hosts. auto: wherever it can run; on: also fail where none can; off: unconfined (a warning says so). Default auto, or the settings' sandbox.enabled"
    )
  ),
  claudeSettings: Flag.Boolean("claude-settings").pipe(
    Flag.withDefault(true),
    Flag.withDescription("Apply Claude Code's settings files: ~/.claude/settings.json, and .claude/settings.json and .claude/settings.local.json (their deny and ask rules always, the rest once the workspace is trusted); --no-claude-settings leaves them out")
  ),
  contextFiles: Flag.Boolean("context-files").pipe(
    Flag.withDefault(true),
    Flag.withDescription("Add AGENTS.md and CLAUDE.md (or the names of the contextFiles setting; user, repository root down to the workspace) to the system prompt; --no-context-files leaves them out")
  ),
  settings: Flag.Boolean("settings").pipe(
    Flag.withDefault(true),
    Flag.withDescription("Read the settings files (user, and the workspace's when trusted); --no-settings ignores them")
  ),
  events: Flag.String("events").pipe(Flag.optional, Flag.withDescription("Write every event to FILE as JSON Lines (/dev/stdout or -: on stdout, instead of the text)")),
  record: Flag.String("record").pipe(
    Flag.optional,
    Flag.withDescription("Record the provider's responses to a cassette FILE (overwritten)")
  ),
  replay: Flag.String("replay").pipe(
    Flag.optional,
    Flag.withDescription("Answer from a cassette FILE instead of a provider: no key, no network")
  ),
  mcpConfig: Flag.String("mcp-config").pipe(
    Flag.optional,
    Flag.withDescription("Add the tools of the MCP servers in FILE ({\"mcpServers\": {...}})")
  ),
  mcpWorkspace: Flag.Boolean("mcp-workspace").pipe(
    Flag.withDefault(true),
    Flag.withDescription(
      "Start the MCP servers of a trusted workspace's .vscode/mcp.json, .cursor/mcp.json and .mcp.json (later ones win); --no-mcp-workspace leaves them out"
    )
  ),
  ...modelOptionFlags,
  verbose: Flag.Boolean("verbose").pipe(
    Flag.withDefault(false),
    Flag.withDescription("Show reasoning, tool results, the context files loaded, errors in full (stack traces), and what MCP servers write to stderr")
  )
}

/** `-p`/`--print` of `run`: Claude Code's print mode, which `run` always is (`agent-loop -p PROMPT` is `agent-loop run PROMPT`). */
export const printFlag = Flag.Boolean("print").pipe(
  Flag.withAlias("p"),
  Flag.withDefault(false),
  Flag.withDescription("Claude Code's print mode: run always prints the answer and exits, so this changes nothing; agent-loop -p PROMPT is agent-loop run PROMPT")
)

/** The parsed values of `agentFlags`. */
export type AgentFlags = { readonly [K in keyof typeof agentFlags]: (typeof agentFlags)[K] extends Flag.Flag<infer A> ? A : never }
