/**
 * `npm run bench:peers`: our loop against pi-agent-core on the same workload (see `workload.ts`).
 *
 * Every measurement runs in a fresh process (`peer.ts`), so neither peer inherits the other's
 * heap or JIT state; the peers alternate within each repetition (and which one goes first
 * alternates too), so machine noise falls on both alike. Prints the medians and ours/pi for the
 * measured turn (after a warm-up turn of at most 300 iterations), its CPU time (steadier than
 * the wall time when the machine is busy), and the wall time of that warm-up turn, the first turn
 * in the process (cold).
 *
 * Options: `--reps=N` (default 5), `--configs=N:d:k,...` (default: all of `CONFIGS`),
 * `--consumer=stream|take`: how our subscriber consumes (default `stream`, see `ours.ts`).
 */
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { CONFIGS, label, median, type Measurement, type Workload } from "./workload.ts"

const PEERS = ["ours", "pi"] as const
type Peer = typeof PEERS[number]

const option = (name: string): string | undefined =>
  process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3)

const reps = Number(option("reps") ?? 5)
const configs: ReadonlyArray<Workload> = option("configs")?.split(",").map((spec) => {
  const [iterations, deltas, tools] = spec.split(":").map(Number)
  return { iterations: iterations!, deltas: deltas!, tools: tools! }
}) ?? CONFIGS

const consumer = option("consumer") ?? "stream"

const peerScript = fileURLToPath(new URL("./peer.ts", import.meta.url))

const measure = async (peer: Peer, w: Workload): Promise<Measurement> => {
  const { stdout } = await promisify(execFile)(process.execPath, [peerScript, peer, String(w.iterations), String(w.deltas), String(w.tools), consumer], {
    maxBuffer: 1 << 20
  })
  return JSON.parse(stdout) as Measurement
}

const results = new Map<string, Record<Peer, Array<Measurement>>>(configs.map((w) => [label(w), { ours: [], pi: [] }]))
console.log(`node ${process.version}, ${reps} repetitions, each measurement in its own process, peers interleaved; our subscriber: ${consumer}\n`)
for (let rep = 0; rep < reps; rep++) {
  const order = rep % 2 === 0 ? PEERS : [...PEERS].reverse()
  for (const w of configs) {
    for (const peer of order) results.get(label(w))![peer].push(await measure(peer, w))
  }
  console.error(`repetition ${rep + 1}/${reps} done`)
}

const fixed = (x: number, digits = 1) => x.toFixed(digits)
const cpu = (runs: ReadonlyArray<Measurement>) => median(runs.map((m) => m.cpuMicrosPerIteration))
const firstTurn = (runs: ReadonlyArray<Measurement>) => median(runs.map((m) => m.firstTurnMicrosPerIteration))
const rows = configs.map((w) => {
  const r = results.get(label(w))!
  const ours = median(r.ours.map((m) => m.microsPerIteration))
  const pi = median(r.pi.map((m) => m.microsPerIteration))
  return {
    "[N,d,k]": label(w),
    "ours µs/iter": fixed(ours),
    "pi µs/iter": fixed(pi),
    "ours/pi": fixed(ours / pi, 2),
    "ours runs": r.ours.map((m) => fixed(m.microsPerIteration, 0)).join(" "),
    "pi runs": r.pi.map((m) => fixed(m.microsPerIteration, 0)).join(" "),
    "events/iter ours|pi": `${fixed(r.ours[0]!.eventsPerIteration)}|${fixed(r.pi[0]!.eventsPerIteration)}`,
    "cpu ours|pi µs/iter": `${fixed(cpu(r.ours))}|${fixed(cpu(r.pi))}`,
    "cpu ours/pi": fixed(cpu(r.ours) / cpu(r.pi), 2),
    "first turn ours|pi µs/iter": `${fixed(firstTurn(r.ours))}|${fixed(firstTurn(r.pi))}`,
    "first turn ours/pi": fixed(firstTurn(r.ours) / firstTurn(r.pi), 2)
  }
})
console.table(rows)

const perIteration = (n: number) => {
  const r = results.get(label({ iterations: n, deltas: 0, tools: 1 }))
  return r && median(r.ours.map((m) => m.microsPerIteration))
}
const [at1k, at10k] = [perIteration(1000), perIteration(10000)]
if (at1k !== undefined && at10k !== undefined) console.log(`ours: µs/iteration at 10,000 iterations / at 1,000: ${fixed(at10k / at1k, 2)}`)
