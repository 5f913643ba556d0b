/**
 * `node bench/firstTurn.ts [--reps=N] [--iterations=0,30,300] [--no-lazy]`: what the first turn
 * of a process costs, ours (streaming path) and pi-agent-core's, for turns of a few sizes
 * ([N,0,1]: N tool-calling iterations, one echo call each). Each measurement is a fresh process
 * (`peer.ts`, settled before the turn), the peers alternate, and the medians are printed in
 * milliseconds for the whole turn, so its fixed part (the one-call turn, N = 0) and its part per
 * iteration (the difference between sizes) can be read apart.
 *
 * `--no-lazy` runs both peers with V8's lazy compilation off: every function is compiled when
 * its module loads rather than when first called, so the turn no longer pays for compiling the
 * code it runs for the first time. The difference is what compiling on first call costs each peer.
 */
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { median, type Measurement } from "./workload.ts"

const option = (name: string): string | undefined =>
  process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3)

const reps = Number(option("reps") ?? 7)
const sizes = (option("iterations") ?? "0,30,300").split(",").map(Number)
const v8Flags = process.argv.includes("--no-lazy") ? ["--no-lazy"] : []
const peerScript = fileURLToPath(new URL("./peer.ts", import.meta.url))

/** The first turn of a process running `peer`'s turns of `n` iterations, in milliseconds. */
const firstTurn = async (peer: "ours" | "pi", n: number): Promise<number> => {
  const args = ["--expose-gc", ...v8Flags, peerScript, peer, String(n), "0", "1", "stream", "stream"]
  const { stdout } = await promisify(execFile)(process.execPath, args, { maxBuffer: 1 << 20 })
  const measured = JSON.parse(stdout) as Measurement
  // the first turn is the warm-up turn, of `n` iterations here (`warmUp` keeps sizes up to 300)
  return (measured.firstTurnMicrosPerIteration * (n + 1)) / 1000
}

console.log(`node ${process.version}${v8Flags.length > 0 ? ` ${v8Flags.join(" ")}` : ""}, ${reps} processes per peer and size, alternating`)
const rows = []
for (const n of sizes) {
  if (n > 300) throw new Error("a first turn is at most 300 iterations (the warm-up turn of bench:peers)")
  const ours: Array<number> = []
  const pi: Array<number> = []
  for (let rep = 0; rep < reps; rep++) {
    ours.push(await firstTurn("ours", n))
    pi.push(await firstTurn("pi", n))
  }
  rows.push({
    "iterations": n,
    "ours ms": median(ours).toFixed(2),
    "pi ms": median(pi).toFixed(2),
    "ours/pi": (median(ours) / median(pi)).toFixed(2),
    "ours runs": ours.map((ms) => ms.toFixed(1)).join(" "),
    "pi runs": pi.map((ms) => ms.toFixed(1)).join(" ")
  })
}
console.table(rows)
