/**
 * The MCP servers the user set up in their other tools, used here too: Cursor's
 * `~/.cursor/mcp.json`, then Claude Code's `~/.claude.json` (in `$CLAUDE_CONFIG_DIR` when that is
 * set, as Claude Code keeps it there), whose user-scope servers and those it keeps for the
 * workspace (`projects`) apply as in Claude Code. They are the user's own files, so they apply in
 * any workspace, trusted or not; a later source (settings, the workspace's files, `--mcp-config`)
 * replaces a server of the same name.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"

/** The user-level MCP files that exist, lowest precedence first. */
export const userMcpFiles = (env: NodeJS.ProcessEnv = process.env): ReadonlyArray<string> => {
  const home = env["HOME"] ?? os.homedir()
  const claudeDir = env["CLAUDE_CONFIG_DIR"]
  const claudeJson = claudeDir !== undefined && nodePath.isAbsolute(claudeDir)
    ? nodePath.join(claudeDir, ".claude.json")
    : nodePath.join(home, ".claude.json")
  // checked here so that a run with none loads no MCP code
  return [nodePath.join(home, ".cursor", "mcp.json"), claudeJson].filter((file) => fs.existsSync(file))
}
