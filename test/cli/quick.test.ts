/**
 * The answers the installed command gives without starting Effect (`src/cli/quick.ts`): which
 * command lines it answers, that its pages are the ones the full CLI prints (built here in-process,
 * compared with the CLI run from its sources), and that it colours them when `effect/cli` would.
 * The built package's own bin is compared with its full CLI in `test/package/packaging.test.ts`.
 */
import { ConfigProvider, Effect, Layer, Stdio } from "effect"
import { TerminalCapabilities } from "effect/cli"
import { beforeAll, describe, expect, it } from "@effect/vitest"
import packageJson from "../../package.json" with { type: "json" }
import { agentLoop } from "../../src/cli/commands.ts"
import { commandPaths, type HelpPages, helpPages } from "../../src/cli/helpPages.ts"
import * as ProviderKeys from "../../src/cli/providers/providerKeys.ts"
import * as Quick from "../../src/cli/quick.ts"
import * as Screen from "../../src/cli/terminal/screen.ts"
import { isolatedEnv, runCli, tempDir } from "../support/cliProcess.ts"

/** Streams that keep what is written. */
const memory = (env: NodeJS.ProcessEnv = {}, isTTY = false) => {
  const out = { stdout: "", stderr: "" }
  const streams: Quick.QuickStreams = {
    stdout: { write: (text: string) => (out.stdout += text), isTTY },
    stderr: { write: (text: string) => (out.stderr += text) },
    env
  }
  return { streams, out }
}

let pages: HelpPages
beforeAll(async () => {
  const quiet = Screen.make({ stdout: { write: () => true }, stderr: { write: () => true }, stdinIsTTY: false, env: {} })
  pages = await Effect.runPromise(
    helpPages(agentLoop, packageJson.version).pipe(
      Effect.provide(Layer.mergeAll(Layer.succeed(Screen.Screen, quiet), Layer.succeed(ProviderKeys.ProviderKeys, {})))
    )
  )
})

describe("quick answers", () => {
  it("the built pages hold every command path of the tree, nested ones and the root included", () => {
    const paths = commandPaths(agentLoop).map((path) => path.join(" "))
    expect(Object.keys(pages.pages).sort()).toEqual([...paths].sort())
    expect(paths).toEqual(expect.arrayContaining(["", "run", "chat", "sessions list", "sessions export", "mcp add", "agents list"]))
    expect(pages.pages["sessions list"]!.plain).toContain("agent-loop sessions list")
    expect(pages.pages["run"]!.color).toContain("\u001b[")
    expect(pages.pages["run"]!.plain).not.toContain("\u001b[")
  })

  it("answers exactly `[path] --help | -h`, `--version | -v` and `models [--provider NAME]`, and leaves every other command line to the CLI, writing nothing", () => {
    for (
      const args of [
        ["--help"], ["-h"], ["run", "--help"], ["sessions", "list", "-h"], ["--version"], ["-v"], ["models"], ["models", "--help"],
        ["models", "--provider", "anthropic"], ["models", "--provider=groq"], ["models", "--provider", "ollama"]
      ]
    ) {
      const { streams, out } = memory()
      expect(Quick.answer(args, pages, streams), args.join(" ")).toBe(true)
      expect(out.stdout + out.stderr, args.join(" ")).not.toBe("")
    }
    for (
      const args of [
        [], ["run"], ["run", "--model", "x", "--help"], ["nope", "--help"], ["--help", "run"], ["models", "--provider", "nope"],
        ["models", "--provider"], ["models", "--provider="], ["models", "--provider", "replay"], ["models", "x"],
        ["models", "--help", "x"], ["run", "--version"], ["--version", "--help", "x"],
        // not a command path, though its words joined by spaces are one
        ["sessions list", "--help"], ["", "--help"]
      ]
    ) {
      const { streams, out } = memory()
      expect(Quick.answer(args, pages, streams), args.join(" ")).toBe(false)
      expect(out, args.join(" ")).toEqual({ stdout: "", stderr: "" })
    }
    // without built pages (the sources), help goes to the CLI; the model list needs none
    expect(Quick.answer(["--help"], undefined, memory().streams)).toBe(false)
    expect(Quick.answer(["models"], undefined, memory().streams)).toBe(true)
  })

  it("prints what the full CLI prints for the same command line", async () => {
    const env = isolatedEnv(tempDir())
    for (
      const args of [
        ["--help"], ["run", "--help"], ["sessions", "export", "-h"], ["--version"], ["models"], ["models", "--provider", "azure"],
        ["models", "--provider=vertex"], ["models", "--provider", "ollama"]
      ]
    ) {
      const full = await runCli(args, { env })
      expect(full.code, full.stderr).toBe(0)
      const { streams, out } = memory(env)
      expect(Quick.answer(args, pages, streams)).toBe(true)
      expect(out, args.join(" ")).toEqual({ stdout: full.stdout, stderr: full.stderr })
    }
  })

  it("colours its pages exactly when effect/cli would (TERM, NO_COLOR, FORCE_COLOR, a terminal)", () => {
    const cases: ReadonlyArray<[Record<string, string>, boolean]> = [
      [{}, false], [{}, true], [{ NO_COLOR: "1" }, true], [{ NO_COLOR: "" }, true], [{ FORCE_COLOR: "1" }, false],
      [{ FORCE_COLOR: "0" }, false], [{ FORCE_COLOR: "false" }, true], [{ FORCE_COLOR: "FALSE" }, false], [{ FORCE_COLOR: "" }, false],
      [{ NO_COLOR: "1", FORCE_COLOR: "1" }, false], [{ TERM: "dumb" }, true], [{ TERM: "dumb", FORCE_COLOR: "1" }, false], [{ TERM: "xterm" }, true]
    ]
    for (const [env, tty] of cases) {
      const effects = Effect.runSync(
        Effect.gen(function*() {
          return (yield* TerminalCapabilities.TerminalCapabilities).canColor
        }).pipe(
          Effect.provide(TerminalCapabilities.layer),
          Effect.provide(Stdio.layerTest({ stdoutIsTerminal: Effect.succeed(tty) })),
          Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env }))
        )
      )
      expect(Quick.colors(memory(env, tty).streams), `${JSON.stringify(env)} tty=${tty}`).toBe(effects)
      const { streams, out } = memory(env, tty)
      Quick.answer(["run", "--help"], pages, streams)
      expect(out.stdout).toBe(`${effects ? pages.pages["run"]!.color : pages.pages["run"]!.plain}\n`)
    }
  })
})
