/**
 * `npm run bench:tools` (not a test): `grep` and `glob` on a large tree against ripgrep on the same
 * tree, patterns and rules. It builds the tree once under `.tmp/bench-tools/` (about 30,000 files
 * and 500 MB: sources in packages, each with a `.gitignore`d `dist/`, a `node_modules`, binary
 * assets, hidden files), then for each pattern runs, in turn so that a change in the machine's
 * load hits all of them alike:
 *
 * - ripgrep as a person would run it over the same files: `rg --hidden --no-require-git
 *   --no-ignore-parent -g '!.git/' -g '!node_modules/' PATTERN` (every match printed, to
 *   /dev/null), and `rg --files … -g GLOB` for glob;
 * - our `grep` with ripgrep choosing the files, and with the built-in search alone (`ripgrep:
 *   false`), in this process, each call timed whole; our `glob`, which also orders its files by
 *   modification time, so `rg --files --sortr modified` (what Claude Code's `Glob` runs) is timed
 *   beside it.
 *
 * It prints the median of each and the median of the ratios run by run, and checks that both ways
 * of `grep` gave the same answer. `RUNS` (default 7) sets the runs; `FILES` (default 30000) the
 * tree's size (a new size builds a new tree); `ONLY=grep` or `ONLY=glob` runs one table. Wall time depends on the machine's load: run it on
 * an idle one.
 */
import { NodeServices } from "@effect/platform-node"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { makeGlob, makeGrep, Message, Tool, WorkspaceLive } from "../src/index.ts"
import { median } from "./workload.ts"

const RUNS = Number(process.env["RUNS"] ?? 7)
const ONLY = process.env["ONLY"]
const FILES = Number(process.env["FILES"] ?? 30_000)
const here = path.dirname(fileURLToPath(import.meta.url))
const tree = path.join(here, "..", ".tmp", "bench-tools", `tree-${FILES}`)
const context: Tool.ToolContext = { toolCallId: "bench", turnId: "t", sessionKey: "s", iteration: 0, depth: 0 }

/** A small fast generator of the same numbers every time (mulberry32). */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const WORDS = [
  "const", "let", "function", "return", "import", "export", "from", "async", "await", "if", "else", "for", "while",
  "class", "extends", "new", "this", "value", "result", "error", "handler", "request", "response", "config", "options",
  "user", "data", "items", "index", "length", "string", "number", "boolean", "Effect", "Layer", "Schema", "map", "filter"
]

/** Builds the tree, unless a finished one is there. */
const build = () => {
  const done = path.join(tree, ".built")
  if (fs.existsSync(done)) return
  fs.rmSync(tree, { recursive: true, force: true })
  const next = random(12345)
  const pick = () => WORDS[Math.floor(next() * WORDS.length)]!
  const line = () => "  ".repeat(Math.floor(next() * 3)) + Array.from({ length: 3 + Math.floor(next() * 10) }, pick).join(" ")
  const text = (bytes: number, extra?: string) => {
    const lines: Array<string> = []
    for (let size = 0; size < bytes;) {
      const l = line()
      lines.push(l)
      size += l.length + 1
    }
    if (extra !== undefined) lines.splice(Math.floor(next() * lines.length), 0, extra)
    return lines.join("\n") + "\n"
  }
  const write = (relative: string, content: string | Uint8Array) => {
    const file = path.join(tree, relative)
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, content)
  }
  const packages = Math.max(1, Math.round(FILES / 500))
  let sources = FILES - packages * 40 - 3000 - 300
  for (let p = 0; p < packages; p++) {
    write(`packages/pkg${p}/.gitignore`, "dist/\n*.log\n")
    write(`packages/pkg${p}/.config/settings.json`, text(500))
    for (let f = 0; f < 40; f++) write(`packages/pkg${p}/dist/out${f}.js`, text(4000))
    for (let f = 0; sources > 0 && f < Math.ceil((FILES - packages * 40 - 3300) / packages); f++, sources--) {
      const roll = next()
      const extra = roll < 0.002
        ? "  const needleXYZ = findTheNeedle()"
        : roll < 0.004
        ? "  const quux042 = 1"
        : roll < 0.05
        ? "export function parseRequestHandler(input) {"
        : undefined
      write(`packages/pkg${p}/src/dir${f % 20}/file${f}.ts`, text(Math.floor(2000 + next() * next() * 60000), extra))
    }
  }
  for (let m = 0; m < 100; m++) for (let f = 0; f < 30; f++) write(`node_modules/mod${m}/lib/f${f}.js`, text(4000))
  for (let b = 0; b < 300; b++) {
    const blob = new Uint8Array(100_000)
    for (let i = 0; i < blob.length; i++) blob[i] = Math.floor(next() * 256)
    write(`assets/img${b}.bin`, blob)
  }
  fs.writeFileSync(done, "")
}

const rgRules = ["--no-config", "--hidden", "--no-require-git", "--no-ignore-parent", "-g", "!.git/", "-g", "!node_modules/", "-g", "!.built"]

/** Milliseconds of one whole ripgrep run, its output thrown away. */
const ripgrep = (args: ReadonlyArray<string>) => {
  const start = performance.now()
  const run = spawnSync("rg", [...rgRules, ...args], { cwd: tree, stdio: ["ignore", "ignore", "ignore"] })
  if (run.error !== undefined) throw run.error
  return performance.now() - start
}

const call = <R>(tool: Tool.Tool<R>, args: unknown) =>
  Effect.gen(function*() {
    const decoded = yield* Effect.orDie(tool.decode(args))
    const start = performance.now()
    const output = Tool.toOutput(yield* tool.execute(decoded, context))
    return { ms: performance.now() - start, text: Message.textOf(output.content) }
  })

const ms = (n: number) => `${n.toFixed(0)} ms`.padStart(8)
const ratio = (n: number) => `${n.toFixed(2)}×`.padStart(7)

const program = Effect.gen(function*() {
  const rgVersion = spawnSync("rg", ["--version"], { encoding: "utf8" }).stdout.split("\n")[0]
  console.log(`${FILES} files, ${os.cpus().length} cores, load ${os.loadavg()[0]!.toFixed(2)}, ${rgVersion}, ${RUNS} runs, medians`)
  if (ONLY !== "glob") yield* grepTable
  if (ONLY !== "grep") yield* globTable
})

const grepTable = Effect.gen(function*() {
  const withRg = makeGrep()
  const builtin = makeGrep({ ripgrep: false })
  console.log("\ngrep                        rg  ours(rg)  ratio   ours(built-in)  ratio   matches")
  for (const pattern of ["needleXYZ", "quux\\d{3}", "\\d{3}", "[Qq]uux0[0-9]2", "function\\s+\\w+Handler", "import"]) {
    const times = { rg: [] as Array<number>, ours: [] as Array<number>, builtin: [] as Array<number> }
    const ratios = { ours: [] as Array<number>, builtin: [] as Array<number> }
    let lines = 0
    for (let run = 0; run < RUNS; run++) {
      const rg = ripgrep([pattern])
      const ours = yield* call(withRg, { pattern })
      const alone = yield* call(builtin, { pattern })
      if (ours.text !== alone.text) throw new Error(`grep /${pattern}/: the two searches differ`)
      lines = ours.text.split("\n").length
      times.rg.push(rg)
      times.ours.push(ours.ms)
      times.builtin.push(alone.ms)
      ratios.ours.push(ours.ms / rg)
      ratios.builtin.push(alone.ms / rg)
    }
    console.log(
      `${pattern.padEnd(24)}${ms(median(times.rg))}${ms(median(times.ours))}${ratio(median(ratios.ours))}` +
        `${ms(median(times.builtin)).padStart(17)}${ratio(median(ratios.builtin))}   ${lines}`
    )
  }
})

const globTable = Effect.gen(function*() {
  const glob = makeGlob()
  console.log("\nglob                         rg --files    ours  ratio   rg --files --sortr modified  ratio   paths")
  for (const pattern of ["**/*.ts", "*.json", "packages/pkg1/src/**/*.ts", "**/file1.ts"]) {
    const times = { rg: [] as Array<number>, ours: [] as Array<number>, sorted: [] as Array<number> }
    const ratios = { rg: [] as Array<number>, sorted: [] as Array<number> }
    let lines = 0
    for (let run = 0; run < RUNS; run++) {
      const rg = ripgrep(["--files", "-g", pattern])
      const ours = yield* call(glob, { pattern })
      // what Claude Code's Glob runs: ripgrep's own newest-first listing
      const sorted = ripgrep(["--files", "--sortr", "modified", "-g", pattern])
      lines = ours.text.split("\n").length
      times.rg.push(rg)
      times.ours.push(ours.ms)
      times.sorted.push(sorted)
      ratios.rg.push(ours.ms / rg)
      ratios.sorted.push(ours.ms / sorted)
    }
    console.log(
      `${pattern.padEnd(28)}${ms(median(times.rg)).padStart(11)}${ms(median(times.ours))}${ratio(median(ratios.rg))}` +
        `${ms(median(times.sorted)).padStart(29)}${ratio(median(ratios.sorted))}   ${lines}`
    )
  }
})

build()
await Effect.runPromise(program.pipe(Effect.provide(WorkspaceLive.layer(fs.realpathSync(tree)).pipe(Layer.provideMerge(NodeServices.layer)))))
