/**
 * Runs the real `agent-loop` CLI from its sources (`src/cli/main.ts`, which Node 24 runs directly) as
 * a child process with a clean, isolated environment, and waits on its output by condition, with a
 * bounded deadline, never for a fixed time. Sources, not the built `dist/`, so that the tests always
 * test the code as it is now; the packaging test covers the installed `bin/agent-loop.js`.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import type { TestContext } from "vitest"
import { type Script, start } from "./openaiServer.ts"
import { DEADLINE_MS } from "./waitUntil.ts"

/** The repository root. */
export const root = fileURLToPath(new URL("../..", import.meta.url))
/** The CLI under test: its source entry. */
export const launcher = path.join(root, "src", "cli", "main.ts")

/**
 * A duration as the CLI prints it (`850 ms`, `1.4 s`, `2 min 5 s`), for patterns over its output:
 * a tool call on a loaded machine may take seconds, and the line's shape is what a test checks.
 */
export const DURATION = String.raw`(?:\d+ ms|\d+\.\d s|\d+ min \d+ s)`

/** A fresh temporary directory. */
export const tempDir = (prefix = "agent-loop-cli-") => fs.mkdtempSync(path.join(os.tmpdir(), prefix))

/**
 * The inherited environment minus anything that would change the CLI's behaviour, plus a private
 * data directory, config home and Claude Code directory (so no user hooks, settings or sessions leak in).
 */
export const isolatedEnv = (home: string, extra: Record<string, string> = {}): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || name.startsWith("AGENT_LOOP_") || name.startsWith("OTEL_") || name.endsWith("_API_KEY") || name === "NO_COLOR") continue
    // credentials and endpoints of the cloud providers (AWS, Azure) the CLI would otherwise pick up
    if (name.startsWith("AWS_") || name.startsWith("AZURE_") || name === "OPENAI_API_VERSION") continue
    env[name] = value
  }
  return {
    ...env,
    AGENT_LOOP_DATA_DIR: path.join(home, "data"),
    XDG_CONFIG_HOME: path.join(home, "config"),
    // Claude Code's user files (~/.claude) of the machine's user never leak in either
    CLAUDE_CONFIG_DIR: path.join(home, ".claude"),
    ...extra
  }
}

/** A running CLI. */
export interface CliProcess {
  readonly child: ChildProcess
  readonly stdout: () => string
  readonly stderr: () => string
  /** Resolves when `pattern` has appeared on the stream (stderr by default); rejects at the deadline. */
  readonly waitFor: (pattern: string | RegExp, stream?: "stdout" | "stderr", timeoutMs?: number) => Promise<void>
  /** The exit code, or the signal that ended it. */
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
  /**
   * When (epoch milliseconds) the process exited, as its `exit` event said, before its output
   * pipes closed; undefined while it runs. Bounds on the CLI's exit are measured to this.
   */
  readonly exitedAt: () => number | undefined
}

const matches = (text: string, pattern: string | RegExp) => (typeof pattern === "string" ? text.includes(pattern) : pattern.test(text))

/** How to start the CLI. */
export interface SpawnOptions {
  readonly env: Record<string, string>
  readonly cwd?: string
  /** Give the CLI a stdin pipe (`child.stdin`) instead of none. */
  readonly stdin?: boolean
  /** The script to start instead of the sources' entry (`launcher`), e.g. an installed bin. */
  readonly entry?: string
}

/** Starts `agent-loop ARGS`. */
export const spawnCli = (args: ReadonlyArray<string>, options: SpawnOptions): CliProcess => {
  const child = spawn(process.execPath, [options.entry ?? launcher, ...args], {
    cwd: options.cwd ?? root,
    env: options.env,
    stdio: [options.stdin === true ? "pipe" : "ignore", "pipe", "pipe"]
  })
  const output = { stdout: "", stderr: "" }
  const watchers = new Set<() => void>()
  const notify = () => watchers.forEach((check) => check())
  child.stdout!.setEncoding("utf8").on("data", (text: string) => {
    output.stdout += text
    notify()
  })
  child.stderr!.setEncoding("utf8").on("data", (text: string) => {
    output.stderr += text
    notify()
  })
  let closed = false
  let exitedAt: number | undefined
  child.on("exit", () => {
    exitedAt = Date.now()
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("close", (code, signal) => {
      closed = true
      resolve({ code, signal })
      notify()
    })
  )
  const waitFor = (pattern: string | RegExp, stream: "stdout" | "stderr" = "stderr", timeoutMs = DEADLINE_MS) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (matches(output[stream], pattern)) {
          cleanup()
          resolve()
        } else if (closed) {
          cleanup()
          reject(new Error(`exited before ${stream} showed ${pattern}\nstdout: ${output.stdout}\nstderr: ${output.stderr}`))
        }
      }
      const timer = setTimeout(() => {
        cleanup()
        reject(new Error(`${stream} never showed ${pattern} within ${timeoutMs} ms\nstdout: ${output.stdout}\nstderr: ${output.stderr}`))
      }, timeoutMs)
      const cleanup = () => {
        clearTimeout(timer)
        watchers.delete(check)
      }
      watchers.add(check)
      check()
    })
  return { child, stdout: () => output.stdout, stderr: () => output.stderr, waitFor, exited, exitedAt: () => exitedAt }
}

/** Runs `agent-loop ARGS` to its end. */
export const runCli = async (args: ReadonlyArray<string>, options: SpawnOptions) => {
  const cli = spawnCli(args, options)
  const { code, signal } = await cli.exited
  return { code, signal, stdout: cli.stdout(), stderr: cli.stderr() }
}

/**
 * The installed command's layout around the sources: `bin/agent-loop.js` and `package.json` as
 * they ship, and a `dist/` whose modules are the sources (`dist/cli/main.js` runs
 * `src/cli/main.ts`), so a test runs the real launcher on the code as it is now, without a build.
 * Returns the bin's path.
 */
export const binOverSources = (dir: string = tempDir("agent-loop-bin-")): string => {
  fs.mkdirSync(path.join(dir, "bin"))
  fs.mkdirSync(path.join(dir, "dist", "cli"), { recursive: true })
  fs.copyFileSync(path.join(root, "bin", "agent-loop.js"), path.join(dir, "bin", "agent-loop.js"))
  fs.copyFileSync(path.join(root, "package.json"), path.join(dir, "package.json"))
  const source = (file: string) => JSON.stringify(pathToFileURL(path.join(root, "src", file)).href)
  fs.writeFileSync(path.join(dir, "dist", "cli", "launcher.js"), `export * from ${source("cli/launcher.ts")}\n`)
  fs.writeFileSync(path.join(dir, "dist", "cli", "main.js"), `import ${source("cli/main.ts")}\n`)
  return path.join(dir, "bin", "agent-loop.js")
}

/** What a test registers its cleanup with: vitest's own context. */
export type { TestContext }

/** How `cliSetup` shapes the home and the flags. */
export interface CliSetupOptions {
  /** The content of `notes.md` in the workspace; no file when absent. */
  readonly notes?: string
  /** The `--model` flag's value (default `fake-model`). */
  readonly model?: string
  /** Flags after the ones pointing the CLI at the server and the workspace. */
  readonly flags?: ReadonlyArray<string>
  /** Variables added to the isolated environment. */
  readonly env?: Record<string, string>
  /** Files to write, by path relative to the home (`ws/...` is in the workspace), directories made as needed. */
  readonly files?: Record<string, string>
}

/**
 * A scripted OpenAI-compatible server (closed when the test finishes), a fresh home holding a
 * workspace `ws`, the flags that point the CLI at both, and an isolated environment.
 */
export const cliSetup = async (context: TestContext, script: Script, options: CliSetupOptions = {}) => {
  const server = await start(script)
  context.onTestFinished(() => server.close())
  const home = tempDir()
  const workspace = path.join(home, "ws")
  fs.mkdirSync(workspace)
  if (options.notes !== undefined) fs.writeFileSync(path.join(workspace, "notes.md"), options.notes)
  for (const [file, text] of Object.entries(options.files ?? {})) {
    fs.mkdirSync(path.dirname(path.join(home, file)), { recursive: true })
    fs.writeFileSync(path.join(home, file), text)
  }
  const flags = ["--base-url", server.url, "--model", options.model ?? "fake-model", "--workspace", workspace, ...(options.flags ?? [])]
  return { server, home, workspace, flags, env: isolatedEnv(home, options.env) }
}
