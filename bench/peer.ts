/**
 * One measurement in a process of its own: `node bench/peer.ts <ours|pi> N d k [whole|stream]
 * [stream|take]` prints the `Measurement` of one turn after a warm-up turn (and of that turn) as
 * JSON. `whole|stream` is how our model hands its reply over (`model.ts`; pi's `streamFn` always
 * streams); the last argument is how our subscriber consumes (`ours.ts`); pi's subscriber is a
 * callback.
 */
import * as Ours from "./ours.ts"
import * as Pi from "./pi.ts"
import { warmUp, type Workload } from "./workload.ts"

const [peer, n, d, k, path = "whole", consumer = "stream"] = process.argv.slice(2)
const workload: Workload = { iterations: Number(n), deltas: Number(d), tools: Number(k) }
if (
  !Object.values(workload).every(Number.isInteger) || (peer !== "ours" && peer !== "pi") ||
  (path !== "whole" && path !== "stream") ||
  (consumer !== "stream" && consumer !== "take")
) {
  console.error("usage: node bench/peer.ts <ours|pi> N d k [whole|stream] [stream|take]")
  process.exit(2)
}
const measurement = peer === "ours" ? Ours.run(workload, warmUp(workload), consumer, path) : Pi.run(workload, warmUp(workload))
console.log(JSON.stringify(await measurement))
