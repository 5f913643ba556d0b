/**
 * `npm run bench:startup` (not a test): how long the installed `agent-loop` command takes to start,
 * and how much memory it peaks at, for `--help`, `models` and a `run` of the offline demo, each over
 * repeated runs (median and worst wall time, median peak RSS). It runs `bin/agent-loop.js`, which
 * starts the built `dist/` as the installed package does (`npm run build` first); with no `dist/`,
 * the sources. Beside them, pi's CLI (`pi --help`, `pi --list-models`) when one is installed: named
 * by `PI_CLI`, or installed into `.tmp/pi-cli` (`npm install --prefix .tmp/pi-cli
 * @mariozechner/pi-coding-agent`; not a dependency of this package).
 *
 * Peak RSS and CPU time (user + system) come from GNU time (`/usr/bin/time -f "%M %U %S"`); without
 * it only wall time is shown. Wall time depends on the machine's load: run it on an idle one, or
 * compare CPU time, which a busy machine changes much less.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const RUNS = Number(process.env["RUNS"] ?? 10)
const gnuTime = fs.existsSync("/usr/bin/time") ? "/usr/bin/time" : undefined

const built = fs.existsSync(path.join(root, "dist", "cli", "main.js"))
const cli = built ? [path.join(root, "bin", "agent-loop.js")] : [path.join(root, "src", "cli", "main.ts")]

/** A private data and config directory, so no user settings or sessions change what is measured. */
const home = fs.mkdtempSync(path.join(os.tmpdir(), "agent-loop-startup-"))
const env = { ...process.env, AGENT_LOOP_DATA_DIR: path.join(home, "data"), XDG_CONFIG_HOME: path.join(home, "config"), NO_COLOR: "1" }

interface Run {
  readonly ms: number
  readonly rssMb: number | undefined
  readonly cpuMs: number | undefined
}

/** One run of `argv`: wall time, and peak RSS when GNU time is there. */
const once = (argv: ReadonlyArray<string>): Run => {
  const command = gnuTime === undefined ? argv : [gnuTime, "-f", "%M %U %S", ...argv]
  const start = performance.now()
  const result = spawnSync(command[0]!, command.slice(1), { cwd: root, env, encoding: "utf8", stdio: ["ignore", "ignore", "pipe"] })
  const ms = performance.now() - start
  if (result.status !== 0) throw new Error(`${argv.join(" ")} exited ${result.status}: ${result.stderr}`)
  const [kb, user, system] = gnuTime === undefined ? [] : (result.stderr.trim().split("\n").at(-1) ?? "").split(" ").map(Number)
  const cpu = user === undefined || system === undefined || Number.isNaN(user + system) ? undefined : (user + system) * 1000
  return { ms, rssMb: kb === undefined || Number.isNaN(kb) ? undefined : kb / 1024, cpuMs: cpu }
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

const measure = (name: string, argv: ReadonlyArray<string>) => {
  once(argv) // warm the file cache
  const runs = Array.from({ length: RUNS }, () => once(argv))
  const ms = runs.map((r) => r.ms)
  const rss = runs.flatMap((r) => (r.rssMb === undefined ? [] : [r.rssMb]))
  const cpu = runs.flatMap((r) => (r.cpuMs === undefined ? [] : [r.cpuMs]))
  const memory = (cpu.length === 0 ? "" : ` · CPU ${(median(cpu) / 1000).toFixed(2)} s`) + (rss.length === 0 ? "" : ` · peak RSS ${median(rss).toFixed(0)} MB`)
  console.log(`${name.padEnd(30)} ${(median(ms) / 1000).toFixed(2)} s median, ${(Math.max(...ms) / 1000).toFixed(2)} s worst${memory} (${RUNS} runs)`)
}

console.log(`agent-loop start-up (${built ? "built dist/ through bin/agent-loop.js" : "sources: run npm run build to measure the package"}), Node ${process.versions.node}, ${os.cpus().length} cores, load ${os.loadavg()[0]!.toFixed(1)}`)
measure("agent-loop --help", [process.execPath, ...cli, "--help"])
measure("agent-loop models", [process.execPath, ...cli, "models"])
measure("agent-loop run (offline demo)", [
  process.execPath, ...cli, "run", "--replay", "examples/demo.cassette.jsonl", "--workspace", "examples/demo-workspace",
  "--tools", "list_dir,read_file", "--no-settings", "--no-context-files", "--ephemeral",
  "What is in this workspace, and what is the project about?"
])
const pi = [process.env["PI_CLI"], path.join(root, ".tmp", "pi-cli", "node_modules", ".bin", "pi"), path.join(root, "node_modules", ".bin", "pi")]
  .find((file) => file !== undefined && fs.existsSync(file))
if (pi !== undefined) {
  measure("pi --help", [pi, "--help"])
  measure("pi --list-models", [pi, "--list-models"])
} else {
  console.log(`${"pi --help".padEnd(30)} not measured: pi's CLI is not installed (npm install --prefix .tmp/pi-cli @mariozechner/pi-coding-agent, or PI_CLI=path)`)
}
fs.rmSync(home, { recursive: true, force: true })
