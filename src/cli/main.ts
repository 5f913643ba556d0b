/**
 * The `agent-loop` executable: parses the command line and runs the command with
 * `NodeRuntime.runMain`.
 *
 * Ctrl-C belongs to the CLI: `run` and `chat` turn it into a graceful interrupt, then a hard abort
 * (`ctrlC.ts`). `runMain` would interrupt the whole program on SIGINT instead, so its SIGINT
 * listener is removed right after it starts; SIGTERM still stops everything through it.
 *
 * `reportFailures` prints every failure as one line, so `runMain`'s own error log is disabled.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Effect, Layer } from "effect"
import { Command } from "effect/cli"
import packageJson from "../../package.json" with { type: "json" }
import { agentLoop } from "./commands.ts"
import { reportFailures } from "./failure.ts"
import * as CliLogger from "./logger.ts"
import * as Screen from "./screen.ts"

const verbose = process.argv.includes("--verbose")
const screen = Screen.ofProcess()

const program = Command.run(agentLoop, { version: packageJson.version }).pipe(
  reportFailures(verbose, screen.lineSync),
  Effect.provide(Layer.mergeAll(NodeServices.layer, Layer.succeed(Screen.Screen, screen), CliLogger.layer(screen)))
)

const before = new Set(process.listeners("SIGINT"))
NodeRuntime.runMain(program, { disableErrorReporting: true })
for (const listener of process.listeners("SIGINT")) {
  if (!before.has(listener)) process.off("SIGINT", listener)
}
