/**
 * `node bench/calls.ts N d k [whole|stream]`: the functions one measured turn of `bench:peers`
 * (after the same warm-up turn) runs, with how many times per iteration, from V8's precise
 * coverage. Every function a turn runs about once per iteration or more is one V8 compiles while
 * the process warms up (Maglev after about 400 calls): the fewer distinct functions on the
 * per-iteration path, the less the process spends compiling. (Counting calls keeps V8 from
 * optimising as it otherwise would: the times printed are not the loop's.)
 */
import { inspectTurn, shortUrl } from "./inspected.ts"
import { label, warmUp, workloadArguments } from "./workload.ts"

interface FunctionCoverage {
  readonly functionName: string
  readonly ranges: ReadonlyArray<{ readonly startOffset: number; readonly count: number }>
}
interface ScriptCoverage {
  readonly url: string
  readonly functions: ReadonlyArray<FunctionCoverage>
}

const { workload, path } = workloadArguments("node bench/calls.ts N d k [whole|stream]")

const { probed: coverage } = await inspectTurn(workload, warmUp(workload), path, {
  // Starting precise coverage resets the counts: what is counted is the measured turn.
  start: async (session) => {
    await session.post("Profiler.enable")
    await session.post("Profiler.startPreciseCoverage", { callCount: true, detailed: false })
  },
  stop: async (session) => (await session.post("Profiler.takePreciseCoverage")).result as ReadonlyArray<ScriptCoverage>
})
const calls = workload.iterations + 1
const rows: Array<{ readonly site: string; readonly perIteration: number; readonly pkg: string }> = []
for (const script of coverage) {
  const file = shortUrl(script.url)
  for (const fn of script.functions) {
    const count = fn.ranges[0]?.count ?? 0
    if (count < calls / 2 || fn.ranges[0]!.startOffset === 0 && fn.functionName === "") continue
    const pkg = file.startsWith("src/") ? "src" : file.split("/")[0]!
    rows.push({ site: `${fn.functionName || "(anonymous)"} ${file}@${fn.ranges[0]!.startOffset}`, perIteration: count / calls, pkg })
  }
}
const byPackage = new Map<string, number>()
for (const row of rows) byPackage.set(row.pkg, (byPackage.get(row.pkg) ?? 0) + 1)
console.log(
  `${label(workload)} ${path}: ${rows.length} functions run at least every other iteration ` +
    `(${[...byPackage].sort((a, b) => b[1] - a[1]).map(([pkg, count]) => `${pkg} ${count}`).join(", ")})`
)
for (const row of rows.sort((a, b) => a.pkg.localeCompare(b.pkg) || a.site.localeCompare(b.site))) {
  console.log(`${row.perIteration.toFixed(2).padStart(8)}  ${row.site}`)
}
