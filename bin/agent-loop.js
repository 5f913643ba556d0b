#!/usr/bin/env node
// The agent-loop CLI. Its source is TypeScript, which Node 24 runs directly (type stripping).
// Under an older `node` (e.g. a system Node 20 found first on PATH), re-run this file with the
// project's own Node 24 (the `node` devDependency) and exit as it did: its exit code, or 128+n
// when signal n ended it, as a shell reports it.
import { spawn } from "node:child_process"
import { constants } from "node:os"
import { fileURLToPath } from "node:url"

const major = Number(process.versions.node.split(".")[0])
if (major >= 24) {
  await import("../src/cli/main.ts")
} else {
  const node = fileURLToPath(new URL("../node_modules/node/bin/node", import.meta.url))
  const child = spawn(node, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: "inherit" })
  // The terminal sends Ctrl-C to the child too; this process only waits for it.
  process.on("SIGINT", () => {})
  // A SIGTERM (from `kill`, a supervisor) is meant for agent-loop, which is the child: pass it on.
  process.on("SIGTERM", () => child.kill("SIGTERM"))
  child.on("error", (error) => {
    process.stderr.write(`agent-loop: needs Node 24 (run npm ci first): ${error.message}\n`)
    process.exit(1)
  })
  child.on("exit", (code, signal) => process.exit(code ?? 128 + (signal === null ? 0 : constants.signals[signal])))
}
