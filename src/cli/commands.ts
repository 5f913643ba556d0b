/**
 * The `agent-loop` command tree (`effect/cli`): `run`, `chat`, `serve`, `hooks list`, `permissions list`,
 * `sessions list|show|import|export`, `ui`, `models`, `mcp list|add|remove|login|logout`, `sandbox status`, `trust`, `untrust`, `undo`.
 *
 * Only the definitions (names, flags, help) are loaded up front; each command's code is imported
 * when that command is chosen (`handler`), so that `--help` and every command start without
 * loading the providers, MCP, SQL, cluster and tool code of the others.
 */
import * as nodePath from "node:path"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Argument from "effect/cli/Argument"
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as ClusterOptions from "./commands/clusterOptions.ts"
import type * as McpCommand from "./commands/mcp.ts"
import type * as McpLoginCommand from "./commands/mcpLogin.ts"
import type { ServeFlags } from "./commands/serve.ts"
import type * as Undo from "./commands/undo.ts"
import { inputFormats, outputFormats } from "./output/formats.ts"
import { storeFlags } from "./sessions/storeFlags.ts"
import { type AgentFlags, agentFlags, printFlag } from "./settings/flags.ts"
import { fail } from "./terminal/failure.ts"

/** Runs `use` on the module `load` imports, loading it only when the command runs. */
const handler = <M, A, E, R>(load: () => Promise<M>, use: (module: M) => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.promise(load), use)

const runCommand = Command.make(
  "run",
  {
    prompt: Argument.String("prompt").pipe(
      Argument.withDescription("What to ask; - or nothing reads it from stdin, and piped input after a prompt is attached to it"),
      Argument.optional
    ),
    commandArgs: Argument.String("args").pipe(
      Argument.variadic(),
      Argument.withDescription("After a /COMMAND prompt: the custom command's arguments")
    ),
    outputFormat: Flag.Literals("output-format", outputFormats).pipe(
      Flag.withDefault("text"),
      Flag.withDescription(
        "text: the answer on stdout; json: one object at the end (status, result, usage, costUsd, sessionKey, error); stream-json: an init line, every event as a JSON line, and a result line per turn (Claude Code's shapes)"
      )
    ),
    inputFormat: Flag.Literals("input-format", inputFormats).pipe(
      Flag.withDefault("text"),
      Flag.withDescription(
        "text: the prompt argument (or stdin); stream-json: user messages as JSON lines on stdin, {\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"...\"}}, one turn each (with --output-format stream-json)"
      )
    ),
    image: Flag.String("image").pipe(
      Flag.atLeast(0),
      Flag.withDescription(
        "Attach an image FILE (PNG, JPEG, GIF, WebP; repeatable). @path/to/file.png in the prompt attaches an image inside the workspace too"
      )
    ),
    outputSchema: Flag.String("output-schema").pipe(
      Flag.optional,
      Flag.withDescription("A JSON Schema file: the answer is typed by it and printed as \"output\" (with --output-format json)")
    ),
    cluster: ClusterOptions.clusterFlag,
    ...ClusterOptions.clientFlags,
    print: printFlag,
    ...agentFlags
  },
  ({ commandArgs, prompt: given, outputFormat, inputFormat, image, outputSchema, cluster, clusterSecret, clusterTlsCa, clusterWait, print: _print, ...flags }) => {
    // `run /NAME a b`: the arguments go with the command (see customCommands.ts); other prompts are one argument
    if (commandArgs.length > 0 && !(given._tag === "Some" && given.value.startsWith("/"))) {
      return fail("a prompt is one argument: quote it (only a /COMMAND prompt takes more)")
    }
    const prompt = commandArgs.length === 0 ? given : Option.map(given, (name) => [name, ...commandArgs].join(" "))
    return cluster._tag === "Some"
      ? outputSchema._tag === "Some" || inputFormat !== "text"
        ? fail(`${outputSchema._tag === "Some" ? "--output-schema" : "--input-format stream-json"} does not work with --cluster`)
        : handler(() => import("./commands/clusterRun.ts"), (m) => m.runOnCluster(prompt, outputFormat, flags, cluster.value, image, { clusterSecret, clusterTlsCa, clusterWait }))
      : handler(() => import("./commands/run.ts"), (m) => m.run(prompt, outputFormat, flags, image, outputSchema, inputFormat))
  }
).pipe(
  Command.withDescription(
    "Run one turn and print the answer. Exit 0 when the turn completes, 130 after Ctrl-C, 143 after SIGTERM, 1 with a reason otherwise."
  ),
  Command.withExamples([
    { command: "agent-loop run --model gpt-4.1-mini \"What is in this directory?\"", description: "Ask OpenAI (OPENAI_API_KEY)" },
    {
      command: "agent-loop run --base-url http://localhost:11434/v1 --model qwen3 \"Summarise README.md\"",
      description: "Ask a local Ollama"
    },
    { command: "git diff | agent-loop run \"Review this change\"", description: "Attach piped input to the prompt" },
    { command: "agent-loop run --model gpt-4.1-mini \"What is wrong in @screenshots/error.png?\"", description: "Show the model an image" },
    { command: "agent-loop run --output-format json - < question.txt", description: "The prompt from a file, the result as JSON" },
    {
      command: "agent-loop run --output-format json --output-schema answer.schema.json \"Largest city in Japan?\"",
      description: "A typed answer: \"output\" holds the answer as the schema describes it"
    },
    { command: "agent-loop run --cluster postgres://agent@db/agents -s support-42 \"Any news?\"", description: "Let a cluster's runners run the turn" }
  ])
)

/** `--inspect PORT` of `chat` and `serve`: the inspector page beside the command (0: any free port). */
const inspectFlag = Flag.Int("inspect").pipe(
  Flag.optional,
  Flag.withDescription("Serve the inspector page on 127.0.0.1:PORT (0: any free port) and print its URL; the turns of this process stream into it")
)

const chatCommand = Command.make(
  "chat",
  { ...agentFlags, inspect: inspectFlag },
  ({ inspect, ...flags }) => handler(() => import("./commands/chat.ts"), (m) => m.chat(flags as AgentFlags, inspect))
).pipe(
  Command.withDescription(
    "Talk in turns. A line typed while the model works steers it; /followup TEXT queues a turn; /help lists the slash commands, custom ones too; Esc stops the turn now (what was done is kept); Ctrl-C interrupts, twice aborts; Shift-Tab cycles the permission mode (plan: the model only reads until you accept its plan); Tab completes commands and @paths, Ctrl-R searches the history; Ctrl-O shows the last tool call whole; /exit quits."
  )
)

const acpFlags = {
  clientTerminal: Flag.Boolean("client-terminal").pipe(
    Flag.withDefault(false),
    Flag.withDescription("Run exec's commands in the editor's terminal when it offers one (terminal/*): the user watches them there, but they run outside agent-loop's sandbox, with the editor's environment")
  )
}

const acpCommand = Command.make("acp", { ...agentFlags, ...acpFlags }, ({ clientTerminal, ...flags }) =>
  handler(() => import("./commands/acp.ts"), (m) => m.acp(flags as AgentFlags, { clientTerminal }))).pipe(
    Command.withDescription(
      "Serve an editor over the Agent Client Protocol on stdin and stdout (Zed, JetBrains IDEs, Neovim): sessions stored and loadable, turns streamed, approvals asked in the editor under the same rules, cancel stops the turn now; file tools read and write the editor's buffers when it offers fs/*, and commands run in its terminal with --client-terminal"
    ),
    Command.withExamples([
      { command: "agent-loop acp --model claude-sonnet-4-5", description: "The command an editor starts (Zed: agent_servers in settings.json)" },
      { command: "agent-loop acp --client-terminal", description: "The same, with commands in the editor's terminal (outside the sandbox)" }
    ])
  )

// Effect Cluster is loaded by the commands that use it only, so that it costs the others no start-up time.
const serve = (flags: ServeFlags) => handler(() => import("./commands/serve.ts"), (m) => m.serve(flags))

/** The HTTP API's own flags of `serve` (without `--database-url`, or with `--api-port`). */
const apiFlags = {
  tokenFile: Flag.String("token-file").pipe(
    Flag.optional,
    Flag.withDescription("The API's bearer token: the first line of FILE (else AGENT_LOOP_SERVER_TOKEN, else one generated at the first start, kept in the data directory and printed once)")
  ),
  corsOrigin: Flag.String("cors-origin").pipe(
    Flag.atLeast(0),
    Flag.withDescription("An origin browsers may call the API from, such as https://app.example (repeatable; default none: CORS off)")
  ),
  apiPort: Flag.Int("api-port").pipe(
    Flag.optional,
    Flag.withDescription("With --database-url: the runner also serves the HTTP API for the whole cluster on --api-host:PORT (0: any free port)")
  ),
  apiHost: Flag.String("api-host").pipe(
    Flag.withDefault("127.0.0.1"),
    Flag.withDescription("The address the --api-port API listens on")
  )
}

const serveCommand = Command.make("serve", { ...ClusterOptions.serveFlags, ...agentFlags, inspect: inspectFlag, ...apiFlags }, serve).pipe(
  Command.withDescription(
    "Serve the loop's HTTP API (sessions, turns, steering, interrupts, approvals, server-sent events; bearer token, 127.0.0.1) and an A2A agent beside it (/a2a, its card at /.well-known/agent-card.json) on --host and --port; with --database-url, run a cluster runner instead: it serves the sessions the cluster gives it (turns sent with run --cluster), and with --api-port the API for the whole cluster too. Both on the provider, tools and store of the flags and settings, until stopped"
  ),
  Command.withExamples([
    { command: "agent-loop serve --port 4318", description: "Serve the API at http://127.0.0.1:4318/v1 (the token is printed the first time)" },
    {
      command: "agent-loop serve --database-url postgres://agent@db/agents --host 10.0.0.5 --model gpt-4.1-mini",
      description: "Join the cluster whose database is db/agents, reachable at 10.0.0.5:34431"
    },
    {
      command: "agent-loop serve --database-url postgres://agent@db/agents --host 10.0.0.5 --api-port 4318",
      description: "The same, and serve the HTTP API for the whole cluster at http://127.0.0.1:4318/v1"
    }
  ])
)

const hooksList = Command.make("list", { workspace: agentFlags.workspace }, ({ workspace }) => handler(() => import("./commands/hooksList.ts"), (m) => m.list(workspace))).pipe(Command.withDescription("List the file hooks a run would load, in run order, then the hooks of the settings files, and the ones skipped"))

const agentsList = Command.make("list", { workspace: agentFlags.workspace }, ({ workspace }) => handler(() => import("./config/agents.ts"), (m) => m.list(workspace))).pipe(
  Command.withDescription("List the sub-agents of the agent files (~/.config/agent-loop/agents, a trusted workspace's .agent-loop/agents and .claude/agents) and the files skipped")
)

const pluginSource = Argument.String("source").pipe(
  Argument.withDescription("A plugin's directory (a git checkout too), a git URL, or an npm package")
)

const pluginAdd = Command.make("add", { source: pluginSource }, ({ source }) => handler(() => import("./commands/plugin.ts"), (m) => m.add(source))).pipe(
  Command.withDescription("Add a Claude Code plugin (.claude-plugin/plugin.json): copied into the data directory, its commands, agents and skills read in every workspace"),
  Command.withExamples([
    { command: "agent-loop plugin add ./my-plugin", description: "A local directory" },
    { command: "agent-loop plugin add some-plugin-package", description: "An npm package (fetched with npm pack, no scripts run)" }
  ])
)

const pluginList = Command.make("list", { workspace: agentFlags.workspace }, ({ workspace }) =>
  handler(() => import("./commands/plugin.ts"), (m) => m.list(workspace._tag === "Some" ? workspace.value : "."))).pipe(
    Command.withDescription("List the plugins added, whether enabledPlugins turns one off here, and what each holds")
  )

const pluginRemove = Command.make("remove", { name: Argument.String("name").pipe(Argument.withDescription("The plugin's name")) }, ({ name }) =>
  handler(() => import("./commands/plugin.ts"), (m) => m.remove(name))).pipe(Command.withDescription("Remove a plugin added with plugin add"))

const plugin = Command.make("plugin").pipe(
  Command.withDescription("Claude Code plugins: add, list or remove one"),
  Command.withSubcommands([pluginAdd, pluginList, pluginRemove])
)

const agents = Command.make("agents").pipe(
  Command.withDescription("Sub-agents from Markdown files, offered to the model by the subagent tool"),
  Command.withSubcommands([agentsList])
)

const hooks = Command.make("hooks").pipe(
  Command.withDescription("File hooks (~/.config/agents/hooks, ./.agents/hooks)"),
  Command.withSubcommands([hooksList])
)

const permissionsList = Command.make(
  "list",
  { workspace: agentFlags.workspace, settings: agentFlags.settings, claudeSettings: agentFlags.claudeSettings, allow: agentFlags.allow, deny: agentFlags.deny },
  (flags) => handler(() => import("./commands/permissionsList.ts"), (m) => m.list({ ...flags, sandbox: Option.none(), verbose: false }))
).pipe(Command.withDescription("List the permission rules a run here would apply, deny rules first, each with the settings file it comes from, and where \"always allow\" saves"))

const permissionsCommand = Command.make("permissions").pipe(
  Command.withDescription("Permission rules (Claude Code syntax) from every settings level and the flags"),
  Command.withSubcommands([permissionsList])
)

const sessionsList = Command.make(
  "list",
  {
    workspace: Flag.String("workspace").pipe(
      Flag.withAlias("w"),
      Flag.optional,
      Flag.withDescription("List the sessions started in DIR (default: the current directory)")
    ),
    all: Flag.Boolean("all").pipe(
      Flag.withDefault(false),
      Flag.withDescription("List every workspace's sessions, with a workspace column (- for sessions saved before workspaces were recorded)")
    ),
    ...storeFlags
  },
  ({ all, workspace, ...flags }) =>
    handler(() => import("./commands/sessions.ts"), (m) =>
      m.list(
        flags,
        all ? { _tag: "all" } : { _tag: "workspace", workspace: nodePath.resolve(Option.getOrElse(workspace, () => ".")) }
      ))
).pipe(
  Command.withDescription("List this workspace's saved sessions, last used first, with message count and first question; * marks the one --continue resumes")
)

const sessionsShow = Command.make(
  "show",
  {
    key: Argument.String("key").pipe(Argument.withDescription("Session key (see sessions list)")),
    all: Flag.Boolean("all").pipe(
      Flag.withDefault(false),
      Flag.withDescription("The whole log: every message ever saved, with the compaction records that shortened the context")
    ),
    ...storeFlags
  },
  ({ all, key, ...flags }) => handler(() => import("./commands/sessions.ts"), (m) => m.show(key, { all }, flags))
).pipe(Command.withDescription("Print a saved session's context, the messages the next turn starts from"))

const sessionsImport = Command.make(
  "import",
  {
    dir: Argument.String("dir").pipe(Argument.withDescription("A directory of JSON Lines sessions, e.g. the data directory's sessions/")),
    ...storeFlags
  },
  ({ dir, ...flags }) => handler(() => import("./commands/sessionsImport.ts"), (m) => m.importSessions(dir, flags))
).pipe(
  Command.withDescription(
    "Copy JSON Lines sessions into the store (--store; default the SQLite database). Safe to repeat: sessions already there are left alone, continued ones get the rest"
  )
)

const sessionsExport = Command.make(
  "export",
  {
    key: Argument.String("key").pipe(Argument.withDescription("Session key (see sessions list)")),
    html: Flag.String("html").pipe(
      Flag.optional,
      Flag.withDescription("Write the session to FILE as one self-contained HTML page (conversation and turn timelines; keys scrubbed; no network)")
    ),
    format: Flag.Literals("format", ["html", "md"] as const).pipe(
      Flag.optional,
      Flag.withDescription("html (with --html FILE or --output FILE) or md: a plain Markdown transcript with a header (model, time, turns, tokens, cost), to stdout unless --output")
    ),
    output: Flag.String("output").pipe(Flag.withAlias("o"), Flag.optional, Flag.withDescription("The FILE to write (written private, 0600)")),
    events: Flag.String("events").pipe(
      Flag.atLeast(0),
      Flag.withDescription("An events FILE written by --events (repeatable): the turns it recorded get timelines with times")
    ),
    ...storeFlags
  },
  ({ events, format, html, key, output, ...flags }) =>
    handler(() => import("./commands/sessionsExport.ts"), (m) =>
      m.exportSession(key, {
        format: Option.getOrUndefined(format),
        html: Option.getOrUndefined(html),
        output: Option.getOrUndefined(output),
        events
      }, flags))
).pipe(Command.withDescription("Export a saved session as one HTML file to open in a browser or share, or as a Markdown transcript (--format md)"))

const sessions = Command.make("sessions").pipe(
  Command.withDescription("Saved sessions (--store: sessions.db in $AGENT_LOOP_DATA_DIR or $XDG_DATA_HOME/agent-loop by default)"),
  Command.withSubcommands([sessionsList, sessionsShow, sessionsImport, sessionsExport])
)

const models = Command.make("models", {
  provider: Flag.String("provider").pipe(Flag.optional, Flag.withDescription("Only the models of this provider (as --provider of run names it)"))
}, ({ provider }) => handler(() => import("./commands/models.ts"), (m) => m.list(Option.getOrUndefined(provider)))).pipe(
  Command.withDescription(
    "List the built-in models: context window, max output, prices per million tokens (input, output, cache read, cache write), images, reasoning"
  )
)

const mcpList = Command.make(
  "list",
  { workspace: agentFlags.workspace, settings: agentFlags.settings, mcpConfig: agentFlags.mcpConfig, mcpWorkspace: agentFlags.mcpWorkspace },
  (flags: McpCommand.ListFlags) => handler(() => import("./commands/mcp.ts"), (m) => m.list(flags))
).pipe(
  Command.withDescription(
    "Start every MCP server a run would (settings, the trusted workspace's MCP files, --mcp-config) and print each one's status, transport, protocol version and tools with their approval; no model needed"
  )
)

const mcpScope = Flag.Literals("scope", ["user", "workspace"])
const mcpName = Argument.String("name").pipe(Argument.withDescription("The server's name; its tools are server__tool in --tools"))

const mcpAdd = Command.make(
  "add",
  {
    name: mcpName,
    commandLine: Argument.String("command").pipe(
      Argument.variadic(),
      Argument.withDescription("After --: the command that starts a stdio server, and its arguments")
    ),
    url: Flag.String("url").pipe(Flag.optional, Flag.withDescription("The URL of a remote server (Streamable HTTP, falling back to HTTP+SSE) instead of a command")),
    transport: Flag.Literals("transport", ["http", "sse"]).pipe(
      Flag.optional,
      Flag.withDescription("With --url: http (default; falls back to HTTP+SSE on a 4xx) or sse (the older HTTP+SSE transport only)")
    ),
    scope: mcpScope.pipe(
      Flag.withDefault("user"),
      Flag.withDescription("user: your settings (every workspace); workspace: the workspace's .mcp.json (shared with Claude Code; used once trusted)")
    ),
    env: Flag.String("env").pipe(Flag.withAlias("e"), Flag.atLeast(0), Flag.withDescription("KEY=VALUE for the server's environment (repeatable; ${VAR} is expanded at start)")),
    header: Flag.String("header").pipe(Flag.withAlias("H"), Flag.atLeast(0), Flag.withDescription("\"Name: value\" sent with every request to a --url server (repeatable; ${VAR} is expanded)")),
    workspace: agentFlags.workspace
  },
  (flags: McpCommand.AddFlags) => handler(() => import("./commands/mcp.ts"), (m) => m.add(flags))
).pipe(
  Command.withDescription("Add an MCP server to your settings or the workspace's .mcp.json"),
  Command.withExamples([
    { command: "agent-loop mcp add files -- npx -y @modelcontextprotocol/server-filesystem .", description: "A stdio server, for every workspace" },
    {
      command: "agent-loop mcp add github --scope workspace --url https://api.githubcopilot.com/mcp/ -H \"Authorization: Bearer \${GITHUB_TOKEN}\"",
      description: "A remote server in the workspace's .mcp.json, its token read from the environment"
    }
  ])
)

const mcpRemove = Command.make(
  "remove",
  {
    name: mcpName,
    scope: mcpScope.pipe(Flag.optional, Flag.withDescription("Where to remove it from (default: the one scope that has it)")),
    workspace: agentFlags.workspace
  },
  (flags: McpCommand.RemoveFlags) => handler(() => import("./commands/mcp.ts"), (m) => m.remove(flags))
).pipe(Command.withDescription("Remove an MCP server from your settings or the workspace's .mcp.json"))

const mcpLoginFlags = {
  name: Argument.String("name").pipe(Argument.withDescription("The remote server's name, as mcp list shows it")),
  workspace: agentFlags.workspace,
  settings: agentFlags.settings,
  mcpConfig: agentFlags.mcpConfig,
  mcpWorkspace: agentFlags.mcpWorkspace
}

const mcpLogin = Command.make(
  "login",
  { ...mcpLoginFlags, open: Flag.Boolean("open").pipe(Flag.withDefault(false), Flag.withDescription("Open the authorization URL in the desktop's browser too")) },
  (flags: McpLoginCommand.LoginFlags) => handler(() => import("./commands/mcpLogin.ts"), (m) => m.login(flags))
).pipe(
  Command.withDescription(
    "Authorize a remote MCP server with OAuth (authorization code with PKCE): prints the URL to open, waits for the redirect on 127.0.0.1, and keeps the tokens (0600, refreshed as they expire) for run, chat and mcp list"
  ),
  Command.withExamples([{ command: "agent-loop mcp login linear --open", description: "Log in to the server named linear in your browser" }])
)

const mcpLogout = Command.make(
  "logout",
  mcpLoginFlags,
  (flags: Omit<McpLoginCommand.LoginFlags, "open">) => handler(() => import("./commands/mcpLogin.ts"), (m) => m.logout(flags))
).pipe(Command.withDescription("Forget the OAuth tokens mcp login kept for a remote MCP server"))

const mcpServeFlags = {
  http: Flag.Int("http").pipe(Flag.optional, Flag.withDescription("Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (0: any free port), behind a bearer token")),
  mcpHost: Flag.String("mcp-host").pipe(Flag.withDefault("127.0.0.1"), Flag.withDescription("The address --http listens on (default 127.0.0.1)")),
  mcpTokenFile: Flag.String("mcp-token-file").pipe(
    Flag.optional,
    Flag.withDescription("The bearer token of --http: the first line of FILE (else AGENT_LOOP_MCP_TOKEN, else a fresh one printed on stderr)")
  ),
  mcpAgents: Flag.String("mcp-agents").pipe(
    Flag.optional,
    Flag.withDescription("The named agents (.claude/agents, .agent-loop/agents, ~/.claude/agents) run_agent offers as agent, comma-separated; default all of them, \"\" none")
  )
}

const mcpServe = Command.make("serve", { ...agentFlags, ...mcpServeFlags }, ({ http, mcpAgents, mcpHost, mcpTokenFile, ...flags }) =>
  handler(() => import("./commands/mcpServe.ts"), (m) => m.serve(flags as AgentFlags, { http, host: mcpHost, tokenFile: mcpTokenFile }, mcpAgents))).pipe(
    Command.withDescription(
      "Serve the agent as an MCP server on stdin and stdout, or streamable HTTP with --http (for Claude Code, Cursor, Codex): the tool run_agent {prompt, session?, agent?} runs a turn (as a named agent when asked) and returns its answer, with progress notifications; approvals are asked of the client by elicitation; a cancelled call stops the turn now"
    ),
    Command.withExamples([
      { command: "claude mcp add agent-loop -- agent-loop mcp serve --yes", description: "Let Claude Code call the agent" },
      { command: "AGENT_LOOP_MCP_TOKEN=secret agent-loop mcp serve --http 8931 --yes", description: "Serve http://127.0.0.1:8931/mcp with a bearer token" }
    ])
  )

const mcp = Command.make("mcp").pipe(
  Command.withDescription("MCP servers: list them with their tools, add or remove one, log in to a remote one; serve the agent as one"),
  Command.withSubcommands([mcpList, mcpAdd, mcpRemove, mcpLogin, mcpLogout, mcpServe])
)

const directory = Argument.String("dir").pipe(
  Argument.withDescription("The workspace directory (default: the current directory)"),
  Argument.withDefault(".")
)

const trust = Command.make(
  "trust",
  {
    dir: directory,
    list: Flag.Boolean("list").pipe(Flag.withDefault(false), Flag.withDescription("List the trusted directories instead"))
  },
  ({ dir, list }) => handler(() => import("./config/trust.ts"), (m) => (list ? m.listCommand() : m.trust(dir)))
).pipe(
  Command.withDescription(
    "Trust a workspace: its file hooks (.agents/hooks) and settings (.agent-loop/settings.json) take effect only once it is trusted"
  )
)

const untrust = Command.make("untrust", { dir: directory }, ({ dir }) => handler(() => import("./config/trust.ts"), (m) => m.untrust(dir))).pipe(
  Command.withDescription("Stop trusting a workspace")
)

const undoCommand = Command.make(
  "undo",
  {
    turn: Flag.String("turn").pipe(Flag.optional, Flag.withDescription("The turn to undo (see --list); default the last one that changed files")),
    session: Flag.String("session").pipe(Flag.withAlias("s"), Flag.optional, Flag.withDescription("The session (default: the one used last)")),
    list: Flag.Boolean("list").pipe(Flag.withDefault(false), Flag.withDescription("List the turns that can be undone instead"))
  },
  (flags: Parameters<typeof Undo.undo>[0]) => handler(() => import("./commands/undo.ts"), (m) => m.undo(flags))
).pipe(
  Command.withDescription(
    "Put back the files the last turn changed with write_file and edit_file; a file changed since is left alone and named (exit 1)"
  ),
  Command.withExamples([{ command: "agent-loop undo", description: "Undo the file changes of the last turn of the session used last" }])
)

const uiCommand = Command.make(
  "ui",
  {
    port: Flag.Int("port").pipe(Flag.withDefault(0), Flag.withDescription("The port to listen on (0: any free port)")),
    host: Flag.String("host").pipe(Flag.withDefault("127.0.0.1"), Flag.withDescription("The address to listen on; anyone who can reach it and has the token sees every session")),
    open: Flag.Boolean("open").pipe(Flag.withDefault(true), Flag.withDescription("Open the page in the browser; --no-open only prints its URL")),
    events: Flag.String("events").pipe(
      Flag.atLeast(0),
      Flag.withDescription("An events FILE written by --events (repeatable): the turns it recorded get timelines with times")
    ),
    ...storeFlags
  },
  (flags) => handler(() => import("./commands/inspect.ts"), (m) => m.ui(flags))
).pipe(
  Command.withDescription("Open the inspector: a local web page of the saved sessions, their conversations and turn timelines (127.0.0.1, a random token in the printed URL)"),
  Command.withExamples([{ command: "agent-loop ui --store jsonl", description: "Inspect the JSON Lines sessions" }])
)

const sandboxStatus = Command.make(
  "status",
  {
    workspace: agentFlags.workspace,
    sandbox: agentFlags.sandbox,
    settings: agentFlags.settings,
    claudeSettings: agentFlags.claudeSettings,
    allow: agentFlags.allow,
    deny: agentFlags.deny
  },
  (flags) => handler(() => import("./commands/sandboxStatus.ts"), (m) => m.status({ ...flags, verbose: false }))
).pipe(
  Command.withDescription(
    "Say whether the sandbox can run here and why not (bubblewrap, user namespaces, sandbox-exec), what a run in this workspace would get (on or off, and from which setting), the policy it applies (writable, unreadable, allowed hosts), and the fix; exit 1 when it is wanted and cannot run"
  )
)

const sandboxCommand = Command.make("sandbox").pipe(
  Command.withDescription("The operating system's sandbox exec's commands run in (bubblewrap on Linux, sandbox-exec on macOS)"),
  Command.withSubcommands([sandboxStatus])
)

/** The whole CLI. */
export const agentLoop = Command.make("agent-loop").pipe(
  Command.withDescription("An event-driven, hookable, interruptible, steerable LLM agent loop"),
  Command.withSubcommands([runCommand, chatCommand, acpCommand, serveCommand, uiCommand, hooks, permissionsCommand, agents, plugin, sessions, models, mcp, sandboxCommand, trust, untrust, undoCommand])
)
