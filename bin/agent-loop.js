#!/usr/bin/env node
// The installed `agent-loop` command: checks the Node version, then starts the built CLI.
//
// The check comes before anything else is loaded because effect and undici need a recent Node and
// would otherwise fail on an older one with a stack trace far from the cause. The minimum is
// `engines.node` of package.json, declared there once. This file avoids newer syntax (no top-level
// await, no import attributes) so that an old Node gets as far as the message.
//
// Inside the repository, npm scripts and tests run the sources instead (`node src/cli/main.ts`).
import { readFileSync } from "node:fs"

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
  import("../dist/cli/main.js")
} else {
  process.stderr.write(`agent-loop needs Node ${minimum} or newer (this is Node ${process.versions.node})\n`)
  process.exitCode = 1
}
