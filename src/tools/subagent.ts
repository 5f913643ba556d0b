/**
 * `subagent` and `spawn`: the model delegates a task to a sub-turn (DESIGN §7).
 *
 * `subagent` waits for the sub-turn and returns its answer as the tool result; `spawn` returns at
 * once ("spawned sub-turn <id>") and the answer reaches the turn later as a `[SubTurn Result]`
 * message (or, if the turn has ended, as a `SubTurnOrphan` event).
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { ToolError } from "../domain/errors.ts"
import * as Tool from "../domain/Tool.ts"
import type { SubTurnConfigInput } from "../domain/SubTurn.ts"
import { CurrentTurn, type SpawnError } from "../services/CurrentTurn.ts"

const common = {
  task: Schema.String.annotate({ description: "The task for the sub-agent, complete and self-contained" }),
  model: Schema.optionalKey(Schema.String.annotate({ description: "Model for the sub-agent (default: the current one)" })),
  tools: Schema.optionalKey(Schema.Array(Schema.String).annotate({ description: "Tool names it may use, among yours (default: all of yours; [] for none)" })),
  system_prompt: Schema.optionalKey(Schema.String.annotate({ description: "A system prompt for the sub-agent" }))
}

/** Arguments of `subagent`. */
export const SubagentParameters = Schema.Struct(common)
/** Arguments of `spawn`. */
export const SpawnParameters = Schema.Struct({
  ...common,
  critical: Schema.optionalKey(Schema.Boolean.annotate({ description: "Keep running after this turn ends" }))
})

const configOf = (
  model: string,
  args: { readonly task: string; readonly model?: string; readonly tools?: ReadonlyArray<string>; readonly system_prompt?: string }
): SubTurnConfigInput => ({
  model: args.model ?? model,
  task: args.task,
  ...(args.tools === undefined ? {} : { tools: args.tools }),
  ...(args.system_prompt ? { systemPrompt: args.system_prompt } : {})
})

const refused = (error: SpawnError) => new ToolError({ message: `Sub-turn not started: ${error._tag}: ${error.message}` })

/** Runs a sub-agent and returns its answer. */
export const subagent = Tool.make({
  name: "subagent",
  description: "Delegate a self-contained task to a sub-agent and wait for its answer.",
  parameters: SubagentParameters,
  execute: (args) =>
    Effect.gen(function*() {
      const turn = yield* CurrentTurn
      const result = yield* turn.spawnSubTurn(configOf(turn.model, args)).pipe(Effect.mapError(refused))
      const answer = result.finalMessage?.content
      return result.status === "completed" && answer !== undefined
        ? answer
        : { content: `Sub-agent ended ${result.status}${result.error ? `: ${result.error}` : ""}${answer ? `\n${answer}` : ""}`, isError: true }
    })
})

/** A named sub-agent the model may pick (`subagentWith`): its own prompt, and optionally its tools and model. */
export interface AgentDefinition {
  readonly name: string
  /** When to use it: shown to the model in the tool's description. */
  readonly description: string
  /** Its system prompt. */
  readonly prompt: string
  /** The tools it may use, `[]` for none; never more than the calling turn's (default: the caller's). */
  readonly tools?: ReadonlyArray<string>
  /** Its model (default: the one the model asks for, else the current one). */
  readonly model?: string
}

/** Arguments of `subagentWith`'s tool: `subagent`'s plus the agent to run. */
export const NamedSubagentParameters = Schema.Struct({
  ...common,
  agent: Schema.optionalKey(Schema.String.annotate({ description: "The name of one of the agents listed in this tool's description" })),
  // as Claude Code's Task has it: hook scripts and rules see it
  description: Schema.optionalKey(Schema.String.annotate({ description: "A short (3-5 word) description of the task" }))
})

/**
 * `subagent` with named agents: the tool's description lists them (name and when to use it), and
 * the model picks one with `agent`; the sub-turn then runs with that agent's prompt, model and
 * tools (never more than the calling turn's: sub-turns only narrow). Without `agent` it is
 * `subagent`.
 */
export const subagentWith = (agents: ReadonlyArray<AgentDefinition>) => {
  const byName = new Map(agents.map((agent) => [agent.name, agent]))
  const listed = agents.map((agent) => `- ${agent.name}: ${agent.description}`).join("\n")
  const tool = Tool.make({
    name: "subagent",
    description: `Delegate a self-contained task to a sub-agent and wait for its answer. Pick one of these agents by name with \`agent\` when one fits:\n${listed}`,
    parameters: NamedSubagentParameters,
    execute: (args) =>
      Effect.gen(function*() {
        const turn = yield* CurrentTurn
        const agent = args.agent === undefined ? undefined : byName.get(args.agent)
        if (args.agent !== undefined && agent === undefined) {
          return yield* new ToolError({ message: `No agent named "${args.agent}"; the agents are: ${[...byName.keys()].join(", ")}` })
        }
        const config = agent === undefined ? configOf(turn.model, args) : {
          model: agent.model ?? args.model ?? turn.model,
          task: args.task,
          systemPrompt: agent.prompt,
          ...(agent.tools !== undefined ? { tools: agent.tools } : args.tools !== undefined ? { tools: args.tools } : {})
        }
        const result = yield* turn.spawnSubTurn(config).pipe(Effect.mapError(refused))
        const answer = result.finalMessage?.content
        return result.status === "completed" && answer !== undefined
          ? answer
          : { content: `Sub-agent ended ${result.status}${result.error ? `: ${result.error}` : ""}${answer ? `\n${answer}` : ""}`, isError: true }
      })
  })
  // a call in Claude Code's Task shape (`subagent_type`, `prompt`) is taken as ours
  return { ...tool, decode: (input: unknown) => tool.decode(fromTaskShape(input)) }
}

/** Claude Code's Task input (`subagent_type`, `prompt`) in `subagentWith`'s names (`agent`, `task`); ours win where both are given. */
const fromTaskShape = (input: unknown): unknown => {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return input
  const { prompt, subagent_type, ...rest } = input as Record<string, unknown>
  return { ...(subagent_type === undefined ? {} : { agent: subagent_type }), ...(prompt === undefined ? {} : { task: prompt }), ...rest }
}

/** Starts a sub-agent in the background; its answer arrives later as a message. */
export const spawn = Tool.make({
  name: "spawn",
  description: "Start a sub-agent on a self-contained task in the background; its answer arrives later as a message.",
  parameters: SpawnParameters,
  execute: (args) =>
    Effect.gen(function*() {
      const turn = yield* CurrentTurn
      const id = yield* turn.spawnDetached({ ...configOf(turn.model, args), critical: args.critical ?? false }).pipe(
        Effect.mapError(refused)
      )
      return `spawned sub-turn ${id}`
    })
})
