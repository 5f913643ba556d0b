/**
 * `npm run bench:peers`: our loop against pi-agent-core on the same workload (see `workload.ts`),
 * on both of our paths: `whole` (the model hands each reply over at once, as `Scripted` and
 * cassettes do) and `stream` (a provider that implements only `stream`, its chunks from an array,
 * as pi's mock `streamFn` pushes them: the path every real provider takes).
 *
 * Every measurement runs in a fresh process (`peer.ts`, with `--expose-gc`), so no run inherits
 * another's heap or JIT state, and the process settles before each timed turn (`settle` in
 * `workload.ts`); the runs alternate within each repetition (and their order rotates), so machine
 * noise falls on all alike. Prints, per path, the medians and ours/pi for the measured turn (after
 * a warm-up turn of at most 300 iterations), its CPU time (steadier than the wall time when the
 * machine is busy) and the main thread's share of it (the loop's own work, without V8's compiler and
 * parallel garbage collection on other threads), and the wall time of that warm-up turn, the first
 * turn in the process (cold).
 *
 * Options: `--reps=N` (default 5), `--configs=N:d:k,...` (default: all of `CONFIGS`),
 * `--paths=whole,stream` (default both), `--consumer=stream|take`: how our subscriber consumes
 * (default `stream`, see `ours.ts`).
 */
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { CONFIGS, label, median, type Measurement, type Workload } from "./workload.ts"

type Path = "whole" | "stream"
/** A run: pi, or ours on one path. */
type Runner = "pi" | Path

const option = (name: string): string | undefined =>
  process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3)

const reps = Number(option("reps") ?? 5)
const configs: ReadonlyArray<Workload> = option("configs")?.split(",").map((spec) => {
  const [iterations, deltas, tools] = spec.split(":").map(Number)
  return { iterations: iterations!, deltas: deltas!, tools: tools! }
}) ?? CONFIGS
const paths = (option("paths")?.split(",") ?? ["whole", "stream"]) as ReadonlyArray<Path>
const consumer = option("consumer") ?? "stream"
const runners: ReadonlyArray<Runner> = ["pi", ...paths]

const peerScript = fileURLToPath(new URL("./peer.ts", import.meta.url))

const measure = async (runner: Runner, w: Workload): Promise<Measurement> => {
  const args = runner === "pi" ? ["pi"] : ["ours"]
  args.push(String(w.iterations), String(w.deltas), String(w.tools), runner === "pi" ? "stream" : runner, consumer)
  const { stdout } = await promisify(execFile)(process.execPath, ["--expose-gc", peerScript, ...args], { maxBuffer: 1 << 20 })
  return JSON.parse(stdout) as Measurement
}

const results = new Map<string, Record<Runner, Array<Measurement>>>(
  configs.map((w) => [label(w), { pi: [], whole: [], stream: [] }])
)
console.log(
  `node ${process.version}, ${reps} repetitions, each measurement in its own process, runs interleaved; our subscriber: ${consumer}\n`
)
for (let rep = 0; rep < reps; rep++) {
  // Rotates the order, so no runner always goes first (or after the same one).
  const order = runners.map((_, i) => runners[(i + rep) % runners.length]!)
  for (const w of configs) {
    for (const runner of order) results.get(label(w))![runner].push(await measure(runner, w))
  }
  console.error(`repetition ${rep + 1}/${reps} done`)
}

const fixed = (x: number, digits = 1) => x.toFixed(digits)
const wall = (runs: ReadonlyArray<Measurement>) => median(runs.map((m) => m.microsPerIteration))
const cpu = (runs: ReadonlyArray<Measurement>) => median(runs.map((m) => m.cpuMicrosPerIteration))
const mainCpu = (runs: ReadonlyArray<Measurement>) => median(runs.map((m) => m.mainCpuMicrosPerIteration))
const firstTurn = (runs: ReadonlyArray<Measurement>) => median(runs.map((m) => m.firstTurnMicrosPerIteration))
/**
 * The median of the per-repetition ratios: each pairs runs made next to each other, so a slow
 * moment of the machine weighs on both sides of one ratio.
 */
const pairedRatio = (ours: ReadonlyArray<Measurement>, pi: ReadonlyArray<Measurement>, of: (m: Measurement) => number) =>
  median(ours.map((m, i) => of(m) / of(pi[i]!)))

for (const path of paths) {
  console.log(`\nour path: ${path}`)
  console.table(configs.map((w) => {
    const r = results.get(label(w))!
    const ours = r[path]
    return {
      "[N,d,k]": label(w),
      "ours µs/iter": fixed(wall(ours)),
      "pi µs/iter": fixed(wall(r.pi)),
      "ours/pi": fixed(pairedRatio(ours, r.pi, (m) => m.microsPerIteration), 2),
      "cpu ours|pi µs/iter": `${fixed(cpu(ours))}|${fixed(cpu(r.pi))}`,
      "cpu ours/pi": fixed(pairedRatio(ours, r.pi, (m) => m.cpuMicrosPerIteration), 2),
      "main thread cpu ours|pi": `${fixed(mainCpu(ours))}|${fixed(mainCpu(r.pi))}`,
      "main thread cpu ours/pi": fixed(pairedRatio(ours, r.pi, (m) => m.mainCpuMicrosPerIteration), 2),
      "first turn ours|pi µs/iter": `${fixed(firstTurn(ours))}|${fixed(firstTurn(r.pi))}`,
      "first turn ours/pi": fixed(pairedRatio(ours, r.pi, (m) => m.firstTurnMicrosPerIteration), 2),
      "ours runs": ours.map((m) => fixed(m.microsPerIteration, 0)).join(" "),
      "pi runs": r.pi.map((m) => fixed(m.microsPerIteration, 0)).join(" "),
      "events/iter ours|pi": `${fixed(ours[0]!.eventsPerIteration)}|${fixed(r.pi[0]!.eventsPerIteration)}`
    }
  }))
  const perIteration = (n: number) => {
    const r = results.get(label({ iterations: n, deltas: 0, tools: 1 }))
    return r && wall(r[path])
  }
  const [at1k, at10k] = [perIteration(1000), perIteration(10000)]
  if (at1k !== undefined && at10k !== undefined) console.log(`ours (${path}): µs/iteration at 10,000 iterations / at 1,000: ${fixed(at10k / at1k, 2)}`)
}
