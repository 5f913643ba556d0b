/**
 * The `McpTools` namespace of the public API (`index.ts`): the names of `layers/McpTools.ts` users
 * need, listed by name; the connection, version and naming steps stay internal.
 */
export {
  findWorkspaceConfig,
  inputVariable,
  layer,
  layerFromConfigFile,
  layerFromSources,
  loadConfig,
  loadConfigWithOrigins,
  login,
  type LoginOptions,
  McpConfigFile,
  McpError,
  McpServerConfig,
  type McpServerConfigInput,
  type McpServerOrigin,
  McpServers,
  type McpSources,
  type McpTool,
  type McpToolsOptions,
  OAuthEntry,
  OAuthError,
  oauthFileStore,
  oauthMemoryStore,
  type OAuthOptions,
  type OAuthStore,
  OAuthStoreError,
  tools
} from "../layers/McpTools.ts"
