/**
 * One measurement in a process of its own: `node bench/peer.ts <ours|pi> N d k` prints the
 * `Measurement` of one turn (after a warm-up turn) as JSON.
 */
import * as Ours from "./ours.ts"
import * as Pi from "./pi.ts"
import { warmUp, type Workload } from "./workload.ts"

const [peer, n, d, k] = process.argv.slice(2)
const workload: Workload = { iterations: Number(n), deltas: Number(d), tools: Number(k) }
if (!Object.values(workload).every(Number.isInteger) || (peer !== "ours" && peer !== "pi")) {
  console.error("usage: node bench/peer.ts <ours|pi> N d k")
  process.exit(2)
}
const runner = peer === "ours" ? Ours.run : Pi.run
console.log(JSON.stringify(await runner(workload, warmUp(workload))))
