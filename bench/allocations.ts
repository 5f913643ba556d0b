/**
 * `node bench/allocations.ts N d k [whole|stream]`: what one measured turn of `bench:peers` (after
 * the same warm-up turn) allocates per iteration, in all and by the function that allocated, as
 * V8's sampling heap profiler sees it (objects already collected included), with the turn's CPU
 * time on the main thread and in the whole process. Allocation decides how often the garbage
 * collector runs; unlike time, it hardly moves when the machine is busy.
 */
import { inspectTurn, shortUrl } from "./inspected.ts"
import { label, warmUp, workloadArguments } from "./workload.ts"

interface SamplingNode {
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly selfSize: number
  readonly children: ReadonlyArray<SamplingNode>
}

const { workload, path } = workloadArguments("node bench/allocations.ts N d k [whole|stream]")

const { measurement, probed: profile } = await inspectTurn(workload, warmUp(workload), path, {
  start: (session) =>
    session.post("HeapProfiler.startSampling", {
      samplingInterval: 256,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true
    }),
  stop: async (session) => (await session.post("HeapProfiler.stopSampling")).profile.head as SamplingNode
})
const calls = workload.iterations + 1
const bySite = new Map<string, number>()
const walk = (node: SamplingNode): void => {
  const { functionName, lineNumber, url } = node.callFrame
  const site = `${functionName || "(anonymous)"} ${shortUrl(url)}:${lineNumber + 1}`
  bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize)
  node.children.forEach(walk)
}
walk(profile)
const total = [...bySite.values()].reduce((a, b) => a + b, 0)
console.log(
  `${label(workload)} ${path}: ${(total / calls / 1024).toFixed(1)} KiB allocated per iteration; ` +
    `CPU ${measurement.cpuMicrosPerIteration.toFixed(1)} µs/iteration, ${measurement.mainCpuMicrosPerIteration.toFixed(1)} on the main thread`
)
for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, 25)) {
  console.log(`${(bytes / calls).toFixed(0).padStart(8)} B  ${site}`)
}
