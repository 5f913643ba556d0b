/**
 * `agent-loop mcp serve`: the loop as an MCP server on stdin and stdout, for MCP clients (Claude
 * Code, Cursor, Codex, …): `protocols/mcpServer/server.ts`. Stdout carries the protocol only;
 * what the CLI says goes to stderr. Approvals are asked of the client by MCP elicitation under the
 * same rules as at a terminal (`--yes` approves, rules allow or deny), within the approval timeout;
 * a client without elicitation cannot be asked, so a call that needs an answer is denied, saying
 * why to the model and in `run_agent`'s result. The named agents of the agent files are offered as
 * `run_agent`'s `agent`, all of them or those `--mcp-agents` names.
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import packageJson from "../../../package.json" with { type: "json" }
import * as McpHttp from "../../protocols/mcpServer/http.ts"
import * as McpServer from "../../protocols/mcpServer/server.ts"
import * as Approval from "../permissions/approval.ts"
import * as App from "../runtime/app.ts"
import type { AgentFlags } from "../settings/flags.ts"
import * as Settings from "../settings/settings.ts"
import type { CliSettings } from "../settings/settings.ts"
import { fail } from "../terminal/failure.ts"
import { Screen } from "../terminal/screen.ts"

/** What is said when the optional SDK is not installed. */
export const SDK_MISSING = "agent-loop mcp serve needs the MCP SDK: npm install @modelcontextprotocol/sdk"

/** How `--http` is reached. */
export interface HttpFlags {
  readonly http: Option.Option<number>
  readonly host: string
  readonly tokenFile: Option.Option<string>
}

/** The endpoint's token: the first line of `--token-file`, else `AGENT_LOOP_MCP_TOKEN`, else a fresh one, printed once. */
const tokenOf = (flags: HttpFlags) =>
  Effect.gen(function*() {
    if (Option.isSome(flags.tokenFile)) {
      const file = flags.tokenFile.value
      const line = (yield* Effect.tryPromise(() => fs.readFile(file, "utf8")).pipe(
        Effect.catch(() => fail(`agent-loop: cannot read --mcp-token-file ${file}`, 1))
      )).split("\n")[0]!.trim()
      if (line === "") return yield* fail(`agent-loop: --mcp-token-file ${file} has no token on its first line`, 1)
      return { token: Redacted.make(line), fresh: false }
    }
    const env = process.env.AGENT_LOOP_MCP_TOKEN
    if (env !== undefined && env.trim() !== "") return { token: Redacted.make(env.trim()), fresh: false }
    return { token: Redacted.make(randomBytes(24).toString("base64url")), fresh: true }
  })

/** The agents `--mcp-agents` names (comma-separated; `""` none), all of them without it; a name that is not an agent fails. */
const exposed = (agents: CliSettings["agents"], names: Option.Option<string>) =>
  Effect.gen(function*() {
    if (Option.isNone(names)) return agents
    const wanted = names.value.split(",").map((name) => name.trim()).filter((name) => name !== "")
    const unknown = wanted.filter((name) => !agents.some((agent) => agent.name === name))
    if (unknown.length > 0) {
      return yield* fail(`agent-loop: --mcp-agents: no agent named ${unknown.join(", ")} (the agents: ${agents.map((a) => a.name).join(", ") || "none"})`, 1)
    }
    return agents.filter((agent) => wanted.includes(agent.name))
  })

/** `agent-loop mcp serve`: serves one MCP client on stdio until it closes the connection, or clients over HTTP (`--http PORT`) until stopped. */
export const serve = (flags: AgentFlags, httpFlags: HttpFlags, agentNames: Option.Option<string> = Option.none()) =>
  Effect.gen(function*() {
    const sdk = yield* Effect.tryPromise(async () => ({
      server: await import("@modelcontextprotocol/sdk/server/index.js"),
      types: await import("@modelcontextprotocol/sdk/types.js"),
      stdio: await import("@modelcontextprotocol/sdk/server/stdio.js"),
      http: await import("@modelcontextprotocol/sdk/server/streamableHttp.js")
    })).pipe(Effect.catch(() => fail(SDK_MISSING, 1)))
    const settings = yield* Settings.resolve(flags)
    yield* Settings.announce(settings)
    const agents = yield* exposed(settings.agents, agentNames)
    yield* Effect.scoped(Effect.gen(function*() {
      const screen = yield* Screen
      const server = yield* McpServer.make(sdk, {
        name: "agent-loop",
        version: packageJson.version,
        agents,
        approvalTimeout: settings.approvalTimeout ?? Approval.ASK_TIMEOUT,
        say: screen.line
      })
      // asked of the client: `ask` only says that someone may be asked
      yield* Approval.register(settings, screen, Effect.succeed(undefined), server.askAbout)
      if (Option.isNone(httpFlags.http)) return yield* server.serve(new sdk.stdio.StdioServerTransport())
      const { fresh, token } = yield* tokenOf(httpFlags)
      const url = yield* McpHttp.listen(sdk.http, server, { host: httpFlags.host, port: httpFlags.http.value, token })
      yield* screen.line(`agent-loop: MCP server at ${url}`)
      // printed once, on stderr, for the user to give their client
      if (fresh) yield* screen.line(`agent-loop: bearer token ${Redacted.value(token)} (set AGENT_LOOP_MCP_TOKEN or --token-file to choose one)`)
      yield* Effect.onInterrupt(Effect.never, () => server.stopAll)
    })).pipe(Effect.provide(App.layer(settings)))
  })
