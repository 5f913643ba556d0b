/**
 * The `agent-loop` command tree (`effect/cli`): `run`, `chat`, `hooks list`, `sessions list|show`.
 */
import { Argument, Command } from "effect/cli"
import { chat } from "./chat.ts"
import { agentFlags } from "./flags.ts"
import * as HooksList from "./hooksList.ts"
import { run } from "./runCommand.ts"
import * as Sessions from "./sessions.ts"

const runCommand = Command.make(
  "run",
  { prompt: Argument.String("prompt").pipe(Argument.withDescription("What to ask")), ...agentFlags },
  ({ prompt, ...flags }) => run(prompt, flags)
).pipe(
  Command.withDescription(
    "Run one turn and print the answer as it streams. Exit 0 when the turn completes, 130 after Ctrl-C, 1 with a reason otherwise."
  ),
  Command.withExamples([
    { command: "agent-loop run --model gpt-4.1-mini \"What is in this directory?\"", description: "Ask OpenAI (OPENAI_API_KEY)" },
    {
      command: "agent-loop run --base-url http://localhost:11434/v1 --model qwen3 \"Summarise README.md\"",
      description: "Ask a local Ollama"
    }
  ])
)

const chatCommand = Command.make("chat", agentFlags, chat).pipe(
  Command.withDescription(
    "Talk in turns. A line typed while the model works steers it; /followup TEXT queues a turn; Ctrl-C interrupts, twice aborts; /exit quits."
  )
)

const hooksList = Command.make("list", { workspace: agentFlags.workspace }, ({ workspace }) => HooksList.list(workspace)).pipe(Command.withDescription("List the file hooks a run would load, in run order, and the ones skipped"))

const hooks = Command.make("hooks").pipe(
  Command.withDescription("File hooks (~/.config/agents/hooks, ./.agents/hooks)"),
  Command.withSubcommands([hooksList])
)

const sessionsList = Command.make("list", {}, () => Sessions.list).pipe(
  Command.withDescription("List saved sessions; * marks the one --continue resumes")
)

const sessionsShow = Command.make(
  "show",
  { key: Argument.String("key").pipe(Argument.withDescription("Session key (see sessions list)")) },
  ({ key }) => Sessions.show(key)
).pipe(Command.withDescription("Print a saved session's messages"))

const sessions = Command.make("sessions").pipe(
  Command.withDescription("Saved sessions ($AGENT_LOOP_DATA_DIR or $XDG_DATA_HOME/agent-loop/sessions)"),
  Command.withSubcommands([sessionsList, sessionsShow])
)

/** The whole CLI. */
export const agentLoop = Command.make("agent-loop").pipe(
  Command.withDescription("An event-driven, hookable, interruptible, steerable LLM agent loop"),
  Command.withSubcommands([runCommand, chatCommand, hooks, sessions])
)
