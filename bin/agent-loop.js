#!/usr/bin/env node
// The installed `agent-loop` command: checks the Node version, then starts the built CLI through
// its launcher (`dist/cli/launcher.js`), which first restarts the process without credentials in
// its environment or passwords on its command line, so that no command the CLI runs can read
// them from /proc.
//
// The check comes before anything else is loaded because effect and undici need a recent Node and
// would otherwise fail on an older one with a stack trace far from the cause. The minimum is
// `engines.node` of package.json, declared there once. This file avoids newer syntax (no top-level
// await, no import attributes) so that an old Node gets as far as the message.
//
// Inside the repository, npm scripts and tests run the sources instead (`node src/cli/main.ts`).
import { readFileSync } from "node:fs"
import * as nodeModule from "node:module"
import { fileURLToPath } from "node:url"

const packageJson = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"))
const minimum = /\d+\.\d+\.\d+/.exec(packageJson.engines.node)[0]

/** Whether version `a` is at least `b` (both "major.minor.patch"). */
const atLeast = (a, b) => {
  const x = a.split(".").map(Number)
  const y = b.split(".").map(Number)
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] > y[i]
  return true
}

if (atLeast(process.versions.node, minimum)) {
  // Node's on-disk cache of compiled code: later starts skip compiling the CLI's modules again.
  if (typeof nodeModule.enableCompileCache === "function") nodeModule.enableCompileCache()
  import("../dist/cli/launcher.js")
    .then((launcher) => launcher.launch(new URL("../dist/cli/main.js", import.meta.url).href, fileURLToPath(import.meta.url)))
    .catch((error) => {
      process.stderr.write(`agent-loop: ${error instanceof Error ? error.message : String(error)}\n`)
      process.exitCode = 1
    })
} else {
  process.stderr.write(`agent-loop needs Node ${minimum} or newer (this is Node ${process.versions.node})\n`)
  process.exitCode = 1
}
