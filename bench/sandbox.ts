/**
 * `npm run bench:sandbox` (not a test): what the Linux sandbox adds to a command. It runs `true`
 * through `exec` many times unconfined (`SandboxNone`) and confined (`SandboxLinux`, no host
 * allowed, and with one host allowed, which starts the network bridge), interleaved so a change in
 * the machine's load hits both, and prints the median and p95 of each and what confinement adds.
 * The first confined run (the probe, git's layout) is left out: it is paid once per session.
 *
 * Wall time depends on the machine's load: run it on an idle one. Without bubblewrap it says so
 * and measures nothing.
 */
import { NodeServices } from "@effect/platform-node"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { exec, Sandbox, type SandboxShape, Tool, WorkspaceLive } from "../src/index.ts"
import * as SandboxLinux from "../src/layers/sandbox/SandboxLinux.ts"
import * as SandboxNone from "../src/layers/sandbox/SandboxNone.ts"

const RUNS = Number(process.env["RUNS"] ?? 60)
const context: Tool.ToolContext = { toolCallId: "bench", turnId: "t", sessionKey: "s", iteration: 0, depth: 0 }

const workspace = fs.mkdtempSync(path.join(os.tmpdir(), "agent-loop-bench-sandbox-"))
execFileSync("git", ["init", "-q"], { cwd: workspace })

const once = (sandbox: SandboxShape) =>
  Effect.gen(function*() {
    const start = performance.now()
    const args = yield* Effect.orDie(exec.decode({ command: "true" }))
    const result = Tool.toOutput(yield* exec.execute(args, context).pipe(Effect.provideService(Sandbox, sandbox)))
    if (result.isError === true) throw new Error(`true failed: ${JSON.stringify(result.content)}`)
    return performance.now() - start
  })

const quantile = (values: ReadonlyArray<number>, q: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}
const ms = (n: number) => `${n.toFixed(1)} ms`

const program = Effect.gen(function*() {
  const none = SandboxNone.make()
  const linux = yield* SandboxLinux.make()
  const bridged = yield* SandboxLinux.make({ allowedHosts: ["example.com"] })
  const status = yield* linux.status
  if (!status.available) {
    console.log(`sandbox unavailable: ${status.reason} (${status.fix}); nothing measured`)
    return
  }
  yield* once(linux)
  yield* once(bridged)
  const times = { none: [] as Array<number>, linux: [] as Array<number>, bridged: [] as Array<number> }
  for (let i = 0; i < RUNS; i++) {
    times.none.push(yield* once(none))
    times.linux.push(yield* once(linux))
    if (i % 3 === 0) times.bridged.push(yield* once(bridged))
  }
  const row = (name: string, values: ReadonlyArray<number>) =>
    console.log(`${name.padEnd(34)} median ${ms(quantile(values, 0.5)).padStart(9)}   p95 ${ms(quantile(values, 0.95)).padStart(9)}   (${values.length} runs)`)
  console.log(`exec of \`true\`, ${os.cpus().length} cores, load ${os.loadavg()[0]!.toFixed(2)}`)
  row("unconfined (plain spawn)", times.none)
  row("sandboxed, no network", times.linux)
  row("sandboxed, a host allowed (bridge)", times.bridged)
  console.log(`the sandbox adds: median ${ms(quantile(times.linux, 0.5) - quantile(times.none, 0.5))}, ` +
    `p95 ${ms(quantile(times.linux, 0.95) - quantile(times.none, 0.95))} (no network); with the bridge: median ` +
    `${ms(quantile(times.bridged, 0.5) - quantile(times.none, 0.5))}`)
})

try {
  await Effect.runPromise(program.pipe(
    Effect.scoped,
    Effect.provide(Layer.mergeAll(WorkspaceLive.layer(workspace)).pipe(Layer.provideMerge(NodeServices.layer)))
  ))
} finally {
  fs.rmSync(workspace, { recursive: true, force: true })
}
