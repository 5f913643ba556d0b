/**
 * What the sandbox tests share: whether bubblewrap runs here, a home and workspace outside `/tmp`
 * (the sandbox replaces `/tmp` with a private one, so a home there would be out of reach for that
 * reason alone), `exec` run through a given sandbox, and a loopback server that answers every
 * request with a fixed text.
 */
import { NodeServices } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { exec, Sandbox, type SandboxShape, Tool, WorkspaceLive } from "effect-agent-loop"

/** Whether bubblewrap starts here, in the namespaces the sandbox asks for. */
export const bwrapRuns = spawnSync("bwrap", [
  "--unshare-user", "--unshare-pid", "--unshare-net", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "true"
]).status === 0

/** The name of a suite that needs bubblewrap: says why it is skipped when it is. */
export const suiteName = (name: string) =>
  bwrapRuns ? name : `${name}: SKIPPED because bubblewrap is missing or cannot create namespaces (apt-get install -y bubblewrap)`

const repoRoot = fileURLToPath(new URL("../..", import.meta.url))

/** A directory outside `/tmp` for test homes and workspaces. */
export const base = fs.existsSync("/var/tmp") ? "/var/tmp" : path.join(repoRoot, ".tmp")

/** The private key written into each test home. */
export const KEY = "-----BEGIN OPENSSH PRIVATE KEY----- sandbox-library-test-secret"

/** A home with `~/.ssh/id_rsa` and `~/.bashrc`, a workspace `ws` in it with `git init` run; removed by `cleanup`. */
export const makeHome = () => {
  const home = fs.realpathSync(fs.mkdtempSync(path.join(base, "agent-loop-sandbox-lib-")))
  const workspace = path.join(home, "ws")
  fs.mkdirSync(path.join(home, ".ssh"), { recursive: true })
  fs.writeFileSync(path.join(home, ".ssh", "id_rsa"), KEY)
  fs.writeFileSync(path.join(home, ".bashrc"), "# bashrc\n")
  fs.mkdirSync(workspace)
  git(workspace, "init", "-q")
  return { home, workspace, cleanup: () => fs.rmSync(home, { recursive: true, force: true }) }
}

/** Runs git in `cwd` with a fixed identity, outside any sandbox. */
export const git = (cwd: string, ...args: ReadonlyArray<string>): string =>
  execFileSync("git", ["-c", "user.name=T", "-c", "user.email=t@example.com", ...args], { cwd, encoding: "utf8" })

const context: Tool.ToolContext = { toolCallId: "call-1", turnId: "turn-1", sessionKey: "s", iteration: 0, depth: 0 }

/** `exec`'s output for `args`, or its error, run in `workspace` through `sandbox`. */
export const execIn = (
  sandbox: SandboxShape,
  workspace: string,
  args: Record<string, unknown>,
  options: { readonly toolCallId?: string; readonly tool?: typeof exec } = {}
) => {
  const tool = options.tool ?? exec
  return tool.decode(args).pipe(
    Effect.orDie,
    Effect.flatMap((decoded) => tool.execute(decoded, { ...context, toolCallId: options.toolCallId ?? context.toolCallId })),
    Effect.map((result) => Tool.toOutput(result)),
    Effect.map((output) => ({ text: typeof output.content === "string" ? output.content : JSON.stringify(output.content), isError: output.isError === true })),
    Effect.provideService(Sandbox, sandbox),
    Effect.provide(Layer.mergeAll(WorkspaceLive.layer(workspace)).pipe(Layer.provideMerge(NodeServices.layer)))
  )
}

/** A server on 127.0.0.1 answering every request with `text`; closed by `close`. */
export const startTextServer = async (text: string) => {
  const server = http.createServer((_, res) => res.writeHead(200, { "content-type": "text/plain" }).end(text))
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as { port: number }).port
  return {
    port,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  }
}
