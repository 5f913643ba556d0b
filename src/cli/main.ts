/**
 * The `agent-loop` executable: parses the command line and runs the command with
 * `NodeRuntime.runMain`.
 *
 * Before anything else, the provider keys are taken out of the environment (`providerKeys.ts`),
 * so nothing the CLI starts inherits them, and a password given on the command line gets a hint
 * to pass it another way (the installed launcher, `launcher.ts`, hides it from `ps` meanwhile).
 *
 * Ctrl-C belongs to the CLI: `run` and `chat` turn it into a graceful interrupt, then a hard abort
 * (`ctrlC.ts`). `runMain` would interrupt the whole program on SIGINT instead, so its SIGINT
 * listener is removed right after it starts; SIGTERM still stops everything through it, and
 * `signals.ts` bounds how long that takes and makes the exit code 143.
 *
 * `reportFailures` prints every failure as one line, so `runMain`'s own error log is disabled.
 *
 * The `OTEL_*` variables turn on OpenTelemetry export (`telemetry.ts`); it closes, sending what is
 * left, when the command ends.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Command from "effect/cli/Command"
import packageJson from "../../package.json" with { type: "json" }
import { urlCredentials } from "../domain/urlCredentials.ts"
import { Secrets } from "../services/Secrets.ts"
import { CLUSTER_URL_VARIABLE } from "./commands/clusterOptions.ts"
import { agentLoop } from "./commands.ts"
import { reportFailures } from "./terminal/failure.ts"
import { passwordFlags } from "./launcher.ts"
import * as CliLogger from "./runtime/logger.ts"
import * as ProviderKeys from "./providers/providerKeys.ts"
import * as ClaudeArgs from "./settings/claudeArgs.ts"
import * as Invocation from "./terminal/invocation.ts"
import * as Screen from "./terminal/screen.ts"
import * as Signals from "./terminal/signals.ts"
import { URL_VARIABLE } from "./sessions/storeFlags.ts"
import * as Telemetry from "./runtime/telemetry.ts"

// A reader that stops early (`agent-loop models | head -1`) closes the pipe: stop quietly with
// 141 (128 + SIGPIPE), as Unix tools end there, rather than crash on the unhandled EPIPE.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error
  process.exit(141)
})

const keys = ProviderKeys.take(process.env)
/** What keeps a URL's password off the command line, for each flag that takes one. */
const passwordFree: Record<string, string> = {
  "--database-url": `${URL_VARIABLE} or --database-url-file FILE`,
  "--cluster": `${CLUSTER_URL_VARIABLE} or --cluster-file FILE`
}
for (const flag of passwordFlags(process.argv.slice(2))) {
  const instead = passwordFree[flag]
  if (instead !== undefined) {
    process.stderr.write(`agent-loop: ${flag} holds a password, which other processes can read on a command line (ps); use ${instead}\n`)
  }
}
const verbose = process.argv.includes("--verbose")
const screen = Screen.ofProcess()

/**
 * A URL with a credential in the environment (the database URL with its password,
 * `REDIS_URL=redis://:PASS@host`, `https://TOKEN@host`) is a secret from the start, whatever the
 * command and the variable: every scrub removes it and, on its own, its credential (`Secrets.add`),
 * and no hook script or command is given the variable holding it (`scrubbedEnv`).
 */
const registerUrls = Effect.gen(function*() {
  const secrets = yield* Secrets
  for (const value of Object.values(process.env)) {
    if (value !== undefined && urlCredentials(value).length > 0) secrets.add([value])
  }
})

const program = Effect.andThen(
  Effect.andThen(ProviderKeys.register(keys), registerUrls),
  // Claude Code's way of typing some flags (`-p PROMPT`, `--allowedTools A B`), read as the loop's (`claudeArgs.ts`)
  Command.runWith(agentLoop, { version: packageJson.version })(
    ClaudeArgs.rewrite(process.argv.slice(2), agentLoop.subcommands.flatMap((group) => group.commands.map((command) => command.name)))
  )
).pipe(
  // inside the terminal's logger, so the OTLP logger joins it rather than replacing it
  Effect.provide(Telemetry.layer()),
  reportFailures(verbose, screen.lineSync),
  Effect.provide(Layer.mergeAll(
    NodeServices.layer,
    Layer.succeed(Screen.Screen, screen),
    // a command line the parser cannot read is one line, not the help page
    Invocation.layer,
    Layer.succeed(ProviderKeys.ProviderKeys, keys),
    CliLogger.layer(screen)
  ))
)

Signals.installSigterm()
const before = new Set(process.listeners("SIGINT"))
NodeRuntime.runMain(program, { disableErrorReporting: true, teardown: Signals.teardown })
for (const listener of process.listeners("SIGINT")) {
  if (!before.has(listener)) process.off("SIGINT", listener)
}
