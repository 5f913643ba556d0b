/**
 * Sub-agents from Markdown files: `~/.claude/agents/*.md` and `~/.config/agent-loop/agents/*.md`,
 * and in a trusted workspace `.claude/agents/*.md` and `.agent-loop/agents/*.md` (later ones
 * replace an agent of the same name, so a project's agent wins over the user's). Front matter
 * `name`, `description`, `tools` (a list or a comma-separated string; Claude Code's names such as
 * `Read` or `Bash` are mapped to the built-in tools) and `model` (a model name, `inherit`, or
 * Claude Code's aliases `sonnet`, `opus`, `haiku`, resolved for the provider in use by
 * `withModels`); the body is the system prompt. The model sees them in the `subagent` tool's
 * description (`subagentWith`).
 *
 * The files are read on the workspace's behalf, so through the confined reader: a workspace's
 * within the workspace and owned by the user, the user's within the configuration directory, each
 * at most `MAX_AGENT_FILE_BYTES`. A file that cannot be used is skipped with why.
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Models from "../../domain/Models.ts"
import { CLAUDE_ALIASES } from "../../layers/claudeHooks/names.ts"
import type { AgentDefinition } from "../../tools/subagent.ts"
import { clean } from "../terminal/safeText.ts"
import { Screen } from "../terminal/screen.ts"
import * as FrontMatter from "./frontMatter.ts"
import * as MarkdownFiles from "./markdownFiles.ts"
import * as Trust from "./trust.ts"

/** The largest agent file read. */
export const MAX_AGENT_FILE_BYTES = 64 * 1024

/** An agent and the file it came from. */
export interface Agent extends AgentDefinition {
  readonly path: string
}

/** An agent file left out, and why. */
export type AgentProblem = MarkdownFiles.FileProblem

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/

const Front = Schema.Struct({
  name: Schema.optionalKey(Schema.String),
  description: Schema.String,
  tools: Schema.optionalKey(Schema.Union([Schema.String, Schema.Array(Schema.String)])),
  model: Schema.optionalKey(Schema.String)
})

/** The tool names of a `tools` field: Claude Code's names mapped to ours, the rest as written. */
const toolNames = (tools: string | ReadonlyArray<string>): ReadonlyArray<string> =>
  [...new Set(FrontMatter.names(tools).map((name) => CLAUDE_ALIASES[name] ?? name))]

/** Parses an agent file's text: front matter, then the body as the prompt. */
export const parse = (path: string, text: string): Result.Result<Agent, string> => {
  const parts = FrontMatter.split(text)
  if (Result.isFailure(parts)) return Result.fail(parts.failure)
  if (parts.success.data === undefined) return Result.fail("an agent file must start with a `---` YAML front matter block")
  const decoded = FrontMatter.decode(Front, parts.success.data)
  if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
  const front = decoded.success
  const name = front.name ?? nodePath.basename(path, ".md")
  if (!NAME.test(name)) return Result.fail(`name "${name}": letters, digits, ".", "_" and "-" only, at most 64`)
  const prompt = parts.success.body
  if (prompt === "") return Result.fail("the body (the agent's system prompt) is empty")
  const model = front.model?.trim()
  return Result.succeed({
    name,
    description: front.description.trim(),
    prompt,
    path,
    ...(front.tools === undefined ? {} : { tools: toolNames(front.tools) }),
    // `inherit`: the calling turn's model, which is what no model means
    ...(model === undefined || model === "" || model === "inherit" ? {} : { model })
  })
}

/** Claude Code's model aliases in agent files, each the family of Anthropic's models it names. */
export const MODEL_ALIASES: ReadonlyArray<string> = ["sonnet", "opus", "haiku"]

/** The provider in use, as agent models are resolved for it: its name, and its table in the model registry. */
export interface ProviderModels {
  readonly name: string
  /** The registry's provider (`Models.forProvider`); `undefined`: the registry has none for it. */
  readonly registry: string | undefined
}

/**
 * An agent's `model` for the provider in use: an alias (`sonnet`, `opus`, `haiku`) is the newest
 * model of that family the registry lists for the provider (`claude-sonnet-4-6` on Anthropic,
 * `anthropic.claude-sonnet-4-6` on Bedrock); any other name is kept. Fails, saying so, when the
 * provider has no model for the alias: a request never carries the alias as a model name.
 */
export const resolveModel = (model: string, provider: ProviderModels): Result.Result<string, string> => {
  if (!MODEL_ALIASES.includes(model)) return Result.succeed(model)
  const family = new RegExp(`(^|[^a-z])${model}([^a-z]|$)`)
  // each table lists the newest first
  const found = provider.registry === undefined
    ? undefined
    : Models.forProvider(provider.registry).find((info) => info.vendor === "anthropic" && family.test(info.id))
  return found === undefined
    ? Result.fail(`model "${model}" is a Claude Code alias, and provider ${provider.name} has no ${model} model (agent-loop models --provider ${provider.name} lists its models)`)
    : Result.succeed(found.id)
}

/** `agents` with their models resolved for `provider` (`resolveModel`); an agent whose alias has no model there is a problem. */
export const withModels = (agents: ReadonlyArray<Agent>, provider: ProviderModels) => {
  const kept: Array<Agent> = []
  const problems: Array<AgentProblem> = []
  for (const agent of agents) {
    if (agent.model === undefined) {
      kept.push(agent)
      continue
    }
    const model = resolveModel(agent.model, provider)
    if (Result.isFailure(model)) problems.push({ path: agent.path, message: model.failure })
    else kept.push({ ...agent, model: model.success })
  }
  return { agents: kept, problems }
}

/** The agent directories, in the order they apply: the user's, then a trusted workspace's. */
export const directories = (workspace: string, trusted: boolean, env: NodeJS.ProcessEnv = process.env) =>
  MarkdownFiles.directories("agents", workspace, trusted, env)

/** The agents found (a later one replacing an earlier one of the same name), and the files skipped. */
export const discover = (workspace: string, trusted: boolean, env: NodeJS.ProcessEnv = process.env) =>
  Effect.map(
    MarkdownFiles.discover({ folder: "agents", workspace, trusted, env, maxBytes: MAX_AGENT_FILE_BYTES, parse }),
    ({ found, problems }) => ({ agents: found, problems })
  )

/** `agent-loop agents list`: the agents a run in the workspace would offer, and the files skipped. */
export const list = (workspace: Option.Option<string>) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const dir = nodePath.resolve(Option.getOrElse(workspace, () => "."))
    const trusted = yield* Trust.isTrusted(dir)
    const found = yield* discover(dir, trusted)
    if (found.agents.length === 0) {
      yield* screen.line(`no agents in ${clean(directories(dir, trusted).map((d) => d.dir).join(" or "))}`)
    }
    for (const agent of found.agents) {
      const details = [
        agent.model === undefined ? undefined : `model ${agent.model}`,
        agent.tools === undefined ? "tools: the caller's" : `tools: ${agent.tools.join(", ") || "none"}`
      ].filter((part) => part !== undefined).join("  ")
      yield* screen.text(`${clean(agent.name)}  ${clean(agent.description)}  ${screen.out.dim(clean(`${details}  ${agent.path}`))}\n`)
    }
    for (const problem of found.problems) yield* screen.line(clean(`skipped ${problem.path}: ${problem.message}`))
    if (!trusted) {
      const fs = yield* FileSystem.FileSystem
      const present: Array<string> = []
      // the workspace's own directories: those read only when it is trusted
      for (const { dir: agentDir } of directories(dir, true).filter((d) => d.ownedByUser)) {
        if (yield* Effect.orElseSucceed(fs.exists(agentDir), () => false)) present.push(nodePath.relative(dir, agentDir))
      }
      if (present.length > 0) {
        yield* screen.line(clean(`workspace ${dir} is not trusted, so the agents in its ${present.join(" and ")} were skipped (agent-loop trust ${dir})`))
      }
    }
  })
