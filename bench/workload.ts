/**
 * The workload both peers run in `npm run bench:peers`: one turn of `iterations` model calls that
 * each ask for `tools` no-op `echo` calls, then one call that answers with text. Every response
 * streams `deltas` text deltas first (0: the final answer is one delta, "done"). The model answers
 * at once (no latency), so what is measured is the loop itself.
 */

/** One configuration [N, d, k]. */
export interface Workload {
  /** N: iterations that call tools (the turn makes N + 1 model calls). */
  readonly iterations: number
  /** d: text deltas per response. */
  readonly deltas: number
  /** k: echo calls per tool-calling response. */
  readonly tools: number
}

/** What one measured turn produced. */
export interface Measurement {
  /** Turn time / model calls, in microseconds, of the turn after the warm-up turn. */
  readonly microsPerIteration: number
  /**
   * The process's CPU time (all its threads, the garbage collector's included) during the turn /
   * model calls, in microseconds: less disturbed than the wall time on a busy machine.
   */
  readonly cpuMicrosPerIteration: number
  /**
   * The main thread's share of that CPU time: the loop's own work, without what V8 does on its
   * other threads meanwhile (compiling the code that became hot, collecting garbage in parallel).
   */
  readonly mainCpuMicrosPerIteration: number
  /** The same for the warm-up turn: the first turn in the process (cold: nothing compiled yet). */
  readonly firstTurnMicrosPerIteration: number
  /** Events the subscriber received, per model call (a sanity check that it saw them all). */
  readonly eventsPerIteration: number
}

/** Starts timing a turn; the returned function gives its wall, process CPU and main-thread CPU time, in microseconds. */
export const stopwatch = () => {
  const start = performance.now()
  const cpu = process.cpuUsage()
  const thread = process.threadCpuUsage()
  return () => {
    const micros = (performance.now() - start) * 1000
    const { system, user } = process.cpuUsage(cpu)
    const main = process.threadCpuUsage(thread)
    return { micros, cpuMicros: user + system, mainCpuMicros: main.user + main.system }
  }
}

/** How long `settle` lets the process go quiet. */
const SETTLE_MS = 200

/**
 * Lets the process go quiet before a timed turn: a full garbage collection when the process runs
 * with `--expose-gc` (as `bench:peers` runs each one), then a pause in which V8 finishes what it
 * still does on its other threads (compiling what the previous turn made hot, sweeping). Without
 * it, a timed turn pays for the work before it: the collection of the heap that loading the
 * modules left, and the warm-up turn's compilation, both of which fall in whichever turn comes
 * next. Both peers settle alike.
 */
export const settle = (): Promise<void> => {
  ;(globalThis as { gc?: () => void }).gc?.()
  return new Promise((resolve) => setTimeout(resolve, SETTLE_MS))
}

/** The configurations of the comparison, as [N, d, k]. */
export const CONFIGS: ReadonlyArray<Workload> = [
  { iterations: 1000, deltas: 0, tools: 1 },
  { iterations: 1000, deltas: 0, tools: 4 },
  { iterations: 1000, deltas: 100, tools: 1 },
  { iterations: 5000, deltas: 0, tools: 1 },
  { iterations: 10000, deltas: 0, tools: 1 }
]

/** The warm-up turn run in the same process before the measured one (the JIT needs a few hundred). */
export const warmUp = (workload: Workload): Workload => ({ ...workload, iterations: Math.min(workload.iterations, 300) })

/**
 * The workload and our model's path named by a bench script's arguments (`N d k [whole|stream]`,
 * options starting with `--` left aside); prints `usage` and exits when they do not name one.
 */
export const workloadArguments = (usage: string): { readonly workload: Workload; readonly path: "whole" | "stream" } => {
  const [n, d, k, path = "stream"] = process.argv.slice(2).filter((arg) => !arg.startsWith("--"))
  const workload: Workload = { iterations: Number(n), deltas: Number(d), tools: Number(k) }
  if (!Object.values(workload).every(Number.isInteger) || (path !== "whole" && path !== "stream")) {
    console.error(`usage: ${usage}`)
    process.exit(2)
  }
  return { workload, path }
}

/** `[N,d,k]`. */
export const label = (w: Workload): string => `[${w.iterations},${w.deltas},${w.tools}]`

/** The text deltas of one response. */
export const deltaTexts = (w: Workload): ReadonlyArray<string> => Array.from({ length: w.deltas }, (_, i) => `t${i} `)

/** The arguments of the echo calls of one response. */
export const echoArguments = (w: Workload): ReadonlyArray<{ readonly text: string }> =>
  Array.from({ length: w.tools }, (_, i) => ({ text: `e${i}` }))

/** A model's plan for one turn: call tools `iterations` times, then answer. */
export const planner = (w: Workload) => {
  let calls = 0
  return {
    /** Whether this call is one of the tool-calling ones; counts the call. */
    next: (): boolean => calls++ < w.iterations,
    /** Model calls made so far. */
    calls: () => calls
  }
}

export const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}
