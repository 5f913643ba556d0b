/**
 * `agent-loop mcp serve`: the loop as an MCP server on stdin and stdout, for MCP clients (Claude
 * Code, Cursor, Codex, …): `protocols/mcpServer/server.ts`. Stdout carries the protocol only;
 * what the CLI says goes to stderr. Nobody can be asked about a call here: the approval policy of
 * the flags and settings decides (`--yes` approves, rules allow), and a call that would need an
 * answer is denied, saying why to the model.
 */
import * as Effect from "effect/Effect"
import packageJson from "../../../package.json" with { type: "json" }
import * as McpServer from "../../protocols/mcpServer/server.ts"
import * as Approval from "../permissions/approval.ts"
import * as App from "../runtime/app.ts"
import type { AgentFlags } from "../settings/flags.ts"
import * as Settings from "../settings/settings.ts"
import { fail } from "../terminal/failure.ts"
import { Screen } from "../terminal/screen.ts"

/** What is said when the optional SDK is not installed. */
export const SDK_MISSING = "agent-loop mcp serve needs the MCP SDK: npm install @modelcontextprotocol/sdk"

/** `agent-loop mcp serve`: serves one MCP client on stdio until it closes the connection. */
export const serve = (flags: AgentFlags) =>
  Effect.gen(function*() {
    const sdk = yield* Effect.tryPromise(async () => ({
      server: await import("@modelcontextprotocol/sdk/server/index.js"),
      types: await import("@modelcontextprotocol/sdk/types.js"),
      stdio: await import("@modelcontextprotocol/sdk/server/stdio.js")
    })).pipe(Effect.catch(() => fail(SDK_MISSING, 1)))
    const settings = yield* Settings.resolve(flags)
    yield* Settings.announce(settings)
    yield* Effect.scoped(Effect.gen(function*() {
      yield* Approval.register(settings, yield* Screen, undefined)
      const server = yield* McpServer.make(sdk, { name: "agent-loop", version: packageJson.version })
      yield* server.serve(new sdk.stdio.StdioServerTransport())
    })).pipe(Effect.provide(App.layer(settings)))
  })
