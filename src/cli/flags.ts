/**
 * The flags of `run` and `chat`: which model, which session, which tools, and what to record.
 * Values missing on the command line fall back to the environment where noted.
 */
import { Config } from "effect"
import { Flag } from "effect/cli"
import * as AgentLoopConfig from "../domain/Config.ts"
import { BuiltinToolName } from "../tools/index.ts"
import { defaultTools } from "./settings.ts"

/** The providers the CLI can talk to. */
const providerNames = ["openai", "anthropic", "replay"] as const

/** The loop's own defaults (any model will do), so that the help never repeats them by hand. */
const loopDefaults = AgentLoopConfig.makeUnsafe({ model: "any" })

/** The flags shared by `run` and `chat`. */
export const agentFlags = {
  provider: Flag.Literals("provider", providerNames).pipe(
    Flag.withFallbackConfig(Config.Literals(providerNames, "AGENT_LOOP_PROVIDER")),
    Flag.optional,
    Flag.withDescription("openai (any Chat Completions server), anthropic, or replay (needs --replay). Env AGENT_LOOP_PROVIDER; default openai")
  ),
  baseUrl: Flag.String("base-url").pipe(
    Flag.withFallbackConfig(Config.String("AGENT_LOOP_BASE_URL")),
    Flag.optional,
    Flag.withDescription("Server URL, e.g. http://localhost:11434/v1 for Ollama. Env AGENT_LOOP_BASE_URL")
  ),
  model: Flag.String("model").pipe(
    Flag.withAlias("m"),
    Flag.withFallbackConfig(Config.String("AGENT_LOOP_MODEL")),
    Flag.optional,
    Flag.withDescription("Model name. Env AGENT_LOOP_MODEL; with --replay, default the cassette's")
  ),
  system: Flag.String("system").pipe(Flag.optional, Flag.withDescription("System prompt instead of the built-in one")),
  session: Flag.String("session").pipe(
    Flag.withAlias("s"),
    Flag.optional,
    Flag.withDescription("Session key to use or create (default: a new session)")
  ),
  continue: Flag.Boolean("continue").pipe(
    Flag.withAlias("c"),
    Flag.withDefault(false),
    Flag.withDescription("Continue the session used last")
  ),
  ephemeral: Flag.Boolean("ephemeral").pipe(
    Flag.withDefault(false),
    Flag.withDescription("Keep the session in memory only: nothing is saved")
  ),
  maxIterations: Flag.Int("max-iterations").pipe(
    Flag.optional,
    Flag.withDescription(`Most model calls in one turn (default ${loopDefaults.maxIterations})`)
  ),
  tools: Flag.String("tools").pipe(
    Flag.optional,
    Flag.withDescription(
      `Comma-separated built-in tools to enable (${BuiltinToolName.literals.join(",")}); default ${defaultTools.join(",")}; "" for none`
    )
  ),
  workspace: Flag.String("workspace").pipe(
    Flag.withAlias("w"),
    Flag.optional,
    Flag.withDescription("Directory the tools may touch and project hooks come from (default: the current directory)")
  ),
  yes: Flag.Boolean("yes").pipe(
    Flag.withAlias("y"),
    Flag.withDefault(false),
    Flag.withDescription("Approve every tool call that needs approval (exec) without asking")
  ),
  events: Flag.String("events").pipe(Flag.optional, Flag.withDescription("Write every event to FILE as JSON Lines")),
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
  verbose: Flag.Boolean("verbose").pipe(
    Flag.withDefault(false),
    Flag.withDescription("Show reasoning, tool results and errors in full")
  )
}

/** The parsed values of `agentFlags`. */
export type AgentFlags = { readonly [K in keyof typeof agentFlags]: (typeof agentFlags)[K] extends Flag.Flag<infer A> ? A : never }
