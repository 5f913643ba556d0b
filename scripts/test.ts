/**
 * `npm test`: the whole suite, in two steps. First the unit project (and the mocking one): every
 * file that runs in the test's own process or starts a CLI or two; then the e2e project: the files
 * that start Postgres servers and cluster runners, Chromium, tmux terminals, third-party MCP
 * servers, or pack and install the package (vitest.config.ts lists them; docs/testing.md says why).
 *
 * Each step writes its own JSON report (`.tmp/vitest-report-unit.json`, `.tmp/vitest-report-e2e.json`),
 * and the wall time of each is printed and kept in `.tmp/test-steps.json` for CI's summary. The
 * second step runs even when the first failed, so one run shows every failure; the exit code is
 * non-zero when either step failed.
 *
 * Arguments are passed to both steps (`npm test -- test/cli` runs the files of test/cli in whichever
 * step holds them; a step with none of them passes).
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const vitest = path.join(root, "node_modules", "vitest", "vitest.mjs")
const args = process.argv.slice(2)

const steps = [
  { name: "unit", projects: ["unit", "mocking"] },
  { name: "e2e", projects: ["e2e"] }
] as const

fs.mkdirSync(path.join(root, ".tmp"), { recursive: true })
const times: Record<string, { readonly seconds: number; readonly code: number | null; readonly signal: string | null }> = {}
let failed = false
for (const step of steps) {
  const report = path.join(".tmp", `vitest-report-${step.name}.json`)
  fs.rmSync(path.join(root, report), { force: true })
  console.log(`\n▶ step ${step.name}: vitest run ${step.projects.map((project) => `--project ${project}`).join(" ")}\n`)
  const started = performance.now()
  const run = spawnSync(process.execPath, [
    vitest,
    "run",
    ...step.projects.flatMap((project) => ["--project", project]),
    "--reporter=default",
    "--reporter=json",
    `--outputFile.json=${report}`,
    ...(args.length > 0 ? ["--passWithNoTests"] : []),
    ...args
  ], { cwd: root, stdio: "inherit" })
  const seconds = Math.round((performance.now() - started) / 1000)
  times[step.name] = { seconds, code: run.status, signal: run.signal }
  if (run.status !== 0) failed = true
  console.log(`\n▶ step ${step.name}: ${seconds} s, ${run.status === 0 ? "passed" : `failed (${run.signal ?? `exit ${run.status}`})`}`)
  // Ctrl-C reaches vitest too: the second step does not start after it
  if (run.signal !== null) break
}
fs.writeFileSync(path.join(root, ".tmp", "test-steps.json"), JSON.stringify(times, null, 2) + "\n")
console.log(`\n▶ ${Object.entries(times).map(([name, { seconds }]) => `${name} ${seconds} s`).join(", ")}`)
process.exit(failed ? 1 : 0)
