/**
 * The OAuth of the CLI's MCP connections (`run`, `chat`, `mcp list`): the authorizations
 * `agent-loop mcp login` keeps in the data directory's `mcp-oauth.json` (0600), and what a server
 * that answers 401 tells the user.
 */
import type { OAuthOptions } from "../../layers/mcp/connect.ts"
import { fileStore } from "../../layers/mcp/oauth/store.ts"
import { dataDir, mcpOAuthFile } from "./dataDir.ts"

/** The store in `data` (default: the data directory), and the hint to log in. */
export const cliOAuth = (data: string = dataDir()): OAuthOptions => ({
  store: fileStore(mcpOAuthFile(data)),
  loginHint: (server) => `the server asks for authorization: run agent-loop mcp login ${server}`
})
