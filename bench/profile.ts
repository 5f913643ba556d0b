/**
 * `node bench/profile.ts N d k [whole|stream] [--cold] [--out=FILE]`: where the main thread's time
 * goes in one measured turn of `bench:peers` (after the same warm-up turn), as V8's sampling CPU
 * profiler sees it: self time per function and per package, per iteration. `--cold` makes the
 * warm-up a single model call, so the turn profiled is nearly the process's first (nothing hot
 * compiled yet); `--out` also writes the profile (`.cpuprofile`, for Chrome's DevTools).
 */
import { writeFileSync } from "node:fs"
import { inspectTurn, shortUrl } from "./inspected.ts"
import { label, warmUp, workloadArguments } from "./workload.ts"

interface ProfileNode {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly children?: ReadonlyArray<number>
}
interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

const out = process.argv.find((arg) => arg.startsWith("--out="))?.slice(6)
const cold = process.argv.includes("--cold")
const { workload, path } = workloadArguments("node bench/profile.ts N d k [whole|stream] [--cold] [--out=FILE]")

const { measurement, probed: profile } = await inspectTurn(workload, cold ? { ...workload, iterations: 0 } : warmUp(workload), path, {
  start: async (session) => {
    await session.post("Profiler.enable")
    await session.post("Profiler.setSamplingInterval", { interval: 50 })
    await session.post("Profiler.start")
  },
  stop: async (session) => (await session.post("Profiler.stop")).profile as Profile
})
if (out !== undefined) writeFileSync(out, JSON.stringify(profile))
const calls = workload.iterations + 1
const byId = new Map(profile.nodes.map((node) => [node.id, node]))
const self = new Map<number, number>()
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)))
const bySite = new Map<string, number>()
const byPackage = new Map<string, number>()
for (const [id, micros] of self) {
  const { functionName, lineNumber, url } = byId.get(id)!.callFrame
  const file = shortUrl(url)
  const site = `${functionName || "(anonymous)"} ${file}:${lineNumber + 1}`
  bySite.set(site, (bySite.get(site) ?? 0) + micros)
  const pkg = url === "" ? functionName : file.startsWith("src/") ? "src" : file.split("/")[0]!
  byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + micros)
}
const perCall = (micros: number) => (micros / calls).toFixed(2).padStart(7)
console.log(
  `${label(workload)} ${path}: CPU ${measurement.cpuMicrosPerIteration.toFixed(1)} µs/iteration, ` +
    `${measurement.mainCpuMicrosPerIteration.toFixed(1)} on the main thread (profiled: slower than unprofiled)`
)
console.log("\nself time by package, µs/iteration:")
for (const [pkg, micros] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`${perCall(micros)}  ${pkg}`)
console.log("\nself time by function, µs/iteration:")
for (const [site, micros] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log(`${perCall(micros)}  ${site}`)
