/**
 * The new CLI parts that need no process: terminal-safe text, usage lines, the waiting indicator
 * (on TestClock), the model registry, settings files, the prompt from stdin and its bound,
 * context files and their bound, and trust (the resolved settings: `resolved-settings.test.ts`).
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { PassThrough } from "node:stream"
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as ContextFiles from "../../src/cli/config/contextFiles.ts"
import { isStdout } from "../../src/cli/output/eventsFile.ts"
import * as Format from "../../src/cli/terminal/format.ts"
import * as ModelsTable from "../../src/cli/providers/modelsTable.ts"
import * as Providers from "../../src/cli/providers/providers.ts"
import { clean } from "../../src/cli/terminal/safeText.ts"
import * as Screen from "../../src/cli/terminal/screen.ts"
import * as SettingsFile from "../../src/cli/config/settingsFile.ts"
import * as Spinner from "../../src/cli/output/spinner.ts"
import { attach, MAX_STDIN_BYTES, readAll, resolvePrompt } from "../../src/cli/input/stdinPrompt.ts"
import * as Trust from "../../src/cli/config/trust.ts"
import { withThousands } from "../../src/domain/text.ts"
import { AgentEvent, Models } from "effect-agent-loop"
import { tempDir as makeTempDir } from "../support/cliProcess.ts"
import { recordingScreen } from "../support/screen.ts"

const tempDir = () => makeTempDir("cli-parts-")

const liveScreen = () => recordingScreen({ isTTY: true })

describe("terminal-safe text", () => {
  it("removes CSI, OSC, other escapes and control characters; keeps text, tabs and newlines", () => {
    expect(clean("a\u001b[31mred\u001b[0m b")).toBe("ared b")
    expect(clean("\u001b]0;pwned\u0007title")).toBe("title")
    expect(clean("\u001b]8;;http://x\u001b\\link\u001b]8;;\u001b\\")).toBe("link")
    expect(clean("x\u001b[2J\u001b[Hy")).toBe("xy")
    expect(clean("8-bit \u009b31m csi")).toBe("8-bit 31m csi")
    expect(clean("back\bspace\u0000nul\rcr\u007f")).toBe("backspacenulcr")
    expect(clean("tab\there\r\nline\n")).toBe("tab\there\nline\n")
    expect(clean("unterminated \u001b]0;title")).toBe("unterminated ")
    // a sequence split across two streamed pieces loses its ESC, so what is left is plain text
    expect(clean("half \u001b[") + clean("31m")).toBe("half 31m")
  })

  it.effect("the screen cleans model text on a terminal, keeps it verbatim in a pipe, and cleans every stderr line it formats", () =>
    Effect.gen(function*() {
      const { out, screen } = liveScreen()
      yield* screen.text("\u001b]0;x\u0007hi")
      expect(out.stdout).toBe("hi")
      const piped = { stdout: "" }
      const pipe = Screen.make({ stdout: { write: (t: string) => (piped.stdout += t) }, stderr: { write: () => true }, stdinIsTTY: false, env: {} })
      yield* pipe.text("\u001b[31mdata\u001b[0m")
      expect(piped.stdout).toBe("\u001b[31mdata\u001b[0m")
      expect(Format.args(JSON.stringify({ path: "a\u009b2Jb" }))).toBe("{\"path\":\"a2Jb\"}")
      expect(Format.truncate("\u001b[1mbold\u001b[0m", 10)).toBe("bold")
    }))
})

describe("usage line", () => {
  it("shows tokens, cached and reasoning details when present, cost when known, and 'tokens unknown' when none were reported", () => {
    expect(Format.usage({ inputTokens: 1234, outputTokens: 56 })).toBe("1,234 in · 56 out tokens")
    expect(Format.usage({ inputTokens: 1234, outputTokens: 56, cachedInputTokens: 1000, reasoningTokens: 20, costUsd: 0.00123 }))
      .toBe("1,234 in (1,000 cached) · 56 out (20 reasoning) tokens · $0.0012")
    expect(Format.usage({ inputTokens: 10, outputTokens: 5, cachedInputTokens: 0, cacheWriteTokens: 7 }))
      .toBe("10 in (7 cache write) · 5 out tokens")
    expect(Format.usage({ inputTokens: 0, outputTokens: 0, costUsd: 0 })).toBe("tokens unknown")
  })
})

describe("waiting indicator", () => {
  const place = { turnId: "t", sessionKey: "s", iteration: 1, depth: 0 }

  it.effect("shows the wait for the model and for tools with elapsed time on the Clock, and erases itself when text or results arrive", () =>
    Effect.gen(function*() {
      const { out, screen } = liveScreen()
      const handle = yield* Spinner.start(screen)
      const last = () => out.stderr.split("\r\u001b[K").at(-1) ?? ""
      yield* handle(AgentEvent.make("LLMRequest", place, 0, { model: "gpt-x", messageCount: 1, toolCount: 0 }))
      expect(last()).toMatch(/waiting for gpt-x · 0 ms/)
      yield* TestClock.adjust(Spinner.TICK_MS * 12)
      expect(last()).toMatch(/waiting for gpt-x · 1\.2 s/)
      yield* handle(AgentEvent.make("LLMDelta", place, 1200, { kind: "reasoning", text: "hm" }))
      expect(last()).toMatch(/gpt-x is thinking · 1\.2 s/)
      yield* handle(AgentEvent.make("LLMDelta", place, 1300, { kind: "text", text: "Hi" }))
      yield* screen.text("Hi\n")
      const shown = out.stderr.length
      yield* TestClock.adjust(Spinner.TICK_MS * 5)
      expect(out.stderr.length).toBe(shown)
      // the clock is at 1.7 s now
      yield* handle(AgentEvent.make("ToolExecStart", place, 1700, { toolCallId: "c1", toolName: "exec", arguments: "{}" }))
      yield* TestClock.adjust(Spinner.TICK_MS * 12)
      expect(last()).toMatch(/running exec · 1\.2 s/)
      yield* handle(AgentEvent.make("ToolExecStart", place, 2900, { toolCallId: "c2", toolName: "grep", arguments: "{}" }))
      expect(last()).toMatch(/running 2 tools/)
      yield* handle(AgentEvent.make("ToolExecEnd", place, 2200, { toolCallId: "c1", toolName: "exec", durationMs: 1, isError: false, result: "" }))
      yield* handle(AgentEvent.make("ToolExecEnd", place, 2200, { toolCallId: "c2", toolName: "grep", durationMs: 1, isError: false, result: "" }))
      expect(out.stderr.endsWith("\r\u001b[K")).toBe(true)
    }).pipe(Effect.scoped))

  it.effect("draws nothing on a screen that is not live (a pipe, NO_COLOR, TERM=dumb)", () =>
    Effect.gen(function*() {
      for (const [isTTY, env] of [[false, {}], [true, { NO_COLOR: "1" }], [true, { TERM: "dumb" }]] as const) {
        const out = { stderr: "" }
        const screen = Screen.make({ stdout: { write: () => true, isTTY }, stderr: { write: (t: string) => (out.stderr += t), isTTY }, stdinIsTTY: false, env })
        expect(screen.live).toBe(false)
        const handle = yield* Spinner.start(screen)
        yield* handle(AgentEvent.make("LLMRequest", place, 0, { model: "m", messageCount: 1, toolCount: 0 }))
        yield* TestClock.adjust(1000)
        expect(out.stderr).toBe("")
      }
    }).pipe(Effect.scoped))
})

describe("model registry", () => {
  it("finds models by id, alias and dated snapshot; prices every id and alias; knows images", () => {
    expect(Models.lookup("gpt-4.1-mini")).toMatchObject({ provider: "openai", vendor: "openai", contextWindow: 1_047_576, maxOutputTokens: 32_768 })
    expect(Models.lookup("gpt-4o-2024-08-06")?.id).toBe("gpt-4o")
    expect(Models.lookup("claude-sonnet-4-5-20250929")?.id).toBe("claude-sonnet-4-5")
    expect(Models.lookup("claude-sonnet-4")?.id).toBe("claude-sonnet-4-0")
    expect(Models.lookup("qwen3")).toBeUndefined()
    expect(Models.lookup("o3-mini")?.images).toBe(false)
    expect(Models.lookup("claude-haiku-4-5")?.price).toEqual({
      inputPerMillion: 1,
      outputPerMillion: 5,
      cachedInputPerMillion: 0.1,
      cacheWritePerMillion: 1.25
    })
    const table = Models.priceTable()
    expect(table["gpt-4.1-mini"]).toEqual({ inputPerMillion: 0.4, outputPerMillion: 1.6, cachedInputPerMillion: 0.1 })
    expect(table["chatgpt-4o-latest"]).toEqual(table["gpt-4o"])
    for (const provider of Models.providers()) {
      const models = Models.forProvider(provider)
      const names = models.flatMap((m) => [m.id, ...(m.aliases ?? [])])
      expect(new Set(names).size, provider).toBe(names.length)
    }
    expect(Models.PRICES_AS_OF).toMatch(/^\d{4}-\d{2}-\d{2}$/)
  })

  it("agent-loop models prints one aligned row per model", () => {
    const rows = ModelsTable.table()
    expect(rows).toHaveLength(Models.builtinModels.length + 1)
    expect(rows[0]).toMatch(/^model\s+provider\s+context\s+max out\s+input\/M\s+output\/M\s+cache read\/M\s+cache write\/M\s+images\s+reasoning$/)
    expect(rows.find((row) => row.startsWith("gpt-4.1-mini "))).toMatch(/openai\s+1,047,576\s+32,768\s+\$0\.4\s+\$1\.6\s+\$0\.1\s+-\s+yes\s+no$/)
    expect(rows.find((row) => row.startsWith("claude-haiku-4-5 "))).toMatch(/anthropic\s+200k\s+64k\s+\$1\s+\$5\s+\$0\.1\s+\$1\.25\s+yes\s+yes$/)
  })

  it("token counts read as people write them: round ones short, others with every digit", () => {
    expect([1_000_000, 2_000_000, 1_050_000, 3_500_000, 1_047_576, 1_048_576, 128_000, 32_768, 8_192, 500].map(ModelsTable.tokens)).toEqual([
      "1M", "2M", "1.05M", "3.5M", "1,047,576", "1,048,576", "128k", "32,768", "8,192", "500"
    ])
  })

  it("thousands are separated as en-US writes them, without loading the locale's data", () => {
    const samples = [0, 7, 999, 1000, 9999, 10_000, 123_456, 1_047_576, -1_234_567, Number.MAX_SAFE_INTEGER, 1.5, 2 ** 60]
    for (let n = 1; n < 1e15; n *= 7) samples.push(n, -n)
    for (const n of samples) expect(withThousands(n), String(n)).toBe(n.toLocaleString("en-US"))
  })

  it("each provider's models are found among its own first: one id, two clouds, two prices", () => {
    const groq = Models.lookup("openai/gpt-oss-120b", Models.forProvider("groq"))
    const openrouter = Models.lookup("openai/gpt-oss-120b", Models.forProvider("openrouter"))
    expect([groq?.provider, groq?.price.inputPerMillion]).toEqual(["groq", 0.15])
    expect([openrouter?.provider, openrouter?.price.inputPerMillion]).toEqual(["openrouter", 0.039])
    expect(Models.lookup("us.anthropic.claude-sonnet-4-5-20250929-v1:0")).toMatchObject({ provider: "bedrock", vendor: "anthropic", contextWindow: 200_000 })
    expect(Models.priceTable(Models.forProvider("groq"))["openai/gpt-oss-120b"]?.inputPerMillion).toBe(0.15)
    for (const model of Models.builtinModels) expect(Schema.decodeUnknownExit(Models.ModelInfo)(model)._tag, model.id).toBe("Success")
  })
})

describe("settings files", () => {
  const parse = (text: string) => Effect.runSync(Effect.result(SettingsFile.parse("/x/settings.json", text)))

  it("a bad file fails with the file, the field and the reason on one line; env values are never echoed", () => {
    const failures: ReadonlyArray<readonly [string, string]> = [
      ["{\"modle\": \"x\"}", "/x/settings.json: modle: unknown setting"],
      ["{\"tools\": [\"read_file\", \"shell\"]}", "/x/settings.json: tools.1: Expected \"read_file\" | \"list_dir\" | \"grep\" | \"glob\" | \"write_file\" | \"edit_file\" | \"exec\" | \"todo_write\" | \"web_fetch\""],
      ["{\"approval\": \"maybe\"}", "/x/settings.json: approval: Expected \"ask\" | \"approve\" | \"deny\""],
      ["{\"provider\": \"replay\"}", `/x/settings.json: provider: one of ${Providers.providers.map((p) => p.name).join(", ")}`],
      ["{\"headers\": {\"X-Title\": 1}}", "/x/settings.json: headers.X-Title: Expected string"],
      ["{\"prices\": {\"m\": {\"inputPerMillion\": \"a\", \"outputPerMillion\": 1}}}", "/x/settings.json: prices.m.inputPerMillion: Expected number"],
      ["{\"mcpServers\": {\"a\": {\"command\": \"x\", \"env\": {\"K\": 12345678}}}}", "/x/settings.json: mcpServers.a.env.K: expected a string"],
      ["{ \"model\": ", "/x/settings.json: not valid JSON"],
      ["[]", "/x/settings.json: (top level): Expected object"]
    ]
    for (const [text, message] of failures) {
      const result = parse(text)
      expect(result._tag === "Failure" && result.failure.message).toBe(message)
    }
  })

  it("merges in order: later files win, prices and MCP servers merge by name", () => {
    const user = parse("{\"model\": \"a\", \"tools\": [\"grep\"], \"prices\": {\"a\": {\"inputPerMillion\": 1, \"outputPerMillion\": 2}}, \"mcpServers\": {\"x\": {\"command\": \"x\"}}}")
    const project = parse("{\"model\": \"b\", \"prices\": {\"b\": {\"inputPerMillion\": 3, \"outputPerMillion\": 4}}, \"mcpServers\": {\"y\": {\"command\": \"y\"}}}")
    if (user._tag !== "Success" || project._tag !== "Success") throw new Error("valid files did not parse")
    const merged = SettingsFile.merge([user.success, project.success])
    expect(merged.settings).toEqual({
      model: "b",
      tools: ["grep"],
      prices: { a: { inputPerMillion: 1, outputPerMillion: 2 }, b: { inputPerMillion: 3, outputPerMillion: 4 } }
    })
    expect(merged.mcpServers).toEqual({ x: { command: "x" }, y: { command: "y" } })
  })
})

describe("prompt from stdin", () => {
  const stream = (...chunks: ReadonlyArray<string | Uint8Array>) => {
    const input = new PassThrough()
    for (const chunk of chunks) input.write(chunk)
    input.end()
    return input
  }
  const message = (exit: Exit.Exit<unknown, unknown>) =>
    Exit.isFailure(exit) ? exit.cause.toString() : "succeeded"

  it.effect("reads exactly MAX_STDIN_BYTES, and fails past them", () =>
    Effect.gen(function*() {
      expect((yield* readAll(stream("é".repeat(MAX_STDIN_BYTES / 2)))).length).toBe(MAX_STDIN_BYTES / 2)
      const over = yield* Effect.exit(readAll(stream("x".repeat(MAX_STDIN_BYTES), "y")))
      expect(message(over)).toContain(`stdin holds more than ${MAX_STDIN_BYTES} bytes`)
      const notText = yield* Effect.exit(readAll(stream(new Uint8Array([0x66, 0xff, 0xfe]))))
      expect(message(notText)).toContain("stdin is not UTF-8 text")
    }))

  it.effect("the argument, '-' or nothing read stdin; piped input is attached after an argument; an empty prompt fails", () =>
    Effect.gen(function*() {
      const piped = (text: string) => ({ isTTY: false, read: Effect.succeed(text) })
      const terminal = { isTTY: true, read: Effect.die("stdin must not be read") }
      expect(yield* resolvePrompt(Option.some("ask"), terminal)).toBe("ask")
      expect(yield* resolvePrompt(Option.some("-"), piped("from stdin\n"))).toBe("from stdin\n")
      expect(yield* resolvePrompt(Option.none(), piped("from stdin"))).toBe("from stdin")
      expect(yield* resolvePrompt(Option.some("review"), piped("diff\n"))).toBe(attach("review", "diff\n"))
      expect(attach("review", "diff\n")).toBe("review\n\n<stdin>\ndiff\n</stdin>")
      expect(yield* resolvePrompt(Option.some("ask"), piped("  \n"))).toBe("ask")
      expect(message(yield* Effect.exit(resolvePrompt(Option.none(), piped(" \n"))))).toContain("empty prompt")
      expect(message(yield* Effect.exit(resolvePrompt(Option.some(""), terminal)))).toContain("empty prompt")
      expect(message(yield* Effect.exit(resolvePrompt(Option.none(), terminal)))).toContain("no prompt")
    }))
})

describe("context files", () => {
  it.effect("user file first, then repository root down to the workspace, AGENTS.md before CLAUDE.md; duplicates once; FIFOs skipped", () =>
    Effect.gen(function*() {
      const root = tempDir()
      const repo = nodePath.join(root, "repo")
      const workspace = nodePath.join(repo, "pkg", "app")
      const config = nodePath.join(root, "config")
      fs.mkdirSync(nodePath.join(repo, ".git"), { recursive: true })
      fs.mkdirSync(workspace, { recursive: true })
      fs.mkdirSync(nodePath.join(config, "agent-loop"), { recursive: true })
      fs.writeFileSync(nodePath.join(root, "AGENTS.md"), "above the repository: never read")
      fs.writeFileSync(nodePath.join(config, "agent-loop", "AGENTS.md"), "user rules")
      fs.writeFileSync(nodePath.join(repo, "AGENTS.md"), "repo rules")
      fs.writeFileSync(nodePath.join(repo, "CLAUDE.md"), "repo rules")
      fs.writeFileSync(nodePath.join(workspace, "CLAUDE.md"), "app rules")
      fs.symlinkSync(nodePath.join(workspace, "CLAUDE.md"), nodePath.join(workspace, "AGENTS.md"))
      fs.mkdirSync(nodePath.join(repo, "pkg", "AGENTS.md"))
      const files = yield* ContextFiles.discover(workspace, { XDG_CONFIG_HOME: config })
      expect(files.map((file) => [file.label, file.content])).toEqual([
        ["(user) AGENTS.md", "user rules"],
        [nodePath.join("..", "..", "AGENTS.md"), "repo rules"],
        ["AGENTS.md", "app rules"]
      ])
      const prompt = ContextFiles.withContextFiles("base", files)
      expect(prompt.startsWith("base\n\n# Project instructions")).toBe(true)
      expect(prompt.indexOf("user rules")).toBeLessThan(prompt.indexOf("repo rules"))
      expect(prompt.indexOf("repo rules")).toBeLessThan(prompt.indexOf("app rules"))
      expect(ContextFiles.withContextFiles("base", [])).toBe("base")
    }).pipe(Effect.provide(NodeServices.layer)))

  it.effect("a file is kept whole up to MAX_CONTEXT_FILE_BYTES and cut past it, with a note", () =>
    Effect.gen(function*() {
      const workspace = tempDir()
      const max = ContextFiles.MAX_CONTEXT_FILE_BYTES
      fs.writeFileSync(nodePath.join(workspace, "AGENTS.md"), "a".repeat(max))
      fs.writeFileSync(nodePath.join(workspace, "CLAUDE.md"), "b".repeat(max + 1))
      const [agents, claude] = yield* ContextFiles.discover(workspace, { XDG_CONFIG_HOME: nodePath.join(workspace, "none") })
      expect(agents!.content).toBe("a".repeat(max))
      expect(claude!.content).toBe(`${"b".repeat(max)}\n[truncated: the first ${max} of ${max + 1} bytes are shown]`)
    }).pipe(Effect.provide(NodeServices.layer)))
})

describe("trust", () => {
  it("a trusted directory covers its subdirectories, not its siblings", () => {
    expect(Trust.trustedBy("/a/b/c", ["/a/b"])).toBe("/a/b")
    expect(Trust.trustedBy("/a/b", ["/a/b", "/a"])).toBe("/a/b")
    expect(Trust.trustedBy("/a/bc", ["/a/b"])).toBeUndefined()
    expect(Trust.trustedBy("/a", ["/a/b"])).toBeUndefined()
  })

  it.effect("trust records the real path, untrust forgets it, and a bad trust file fails with one line", () =>
    Effect.gen(function*() {
      const home = tempDir()
      const env = { XDG_CONFIG_HOME: nodePath.join(home, "config") }
      const dir = nodePath.join(home, "ws")
      fs.mkdirSync(dir)
      fs.symlinkSync(dir, nodePath.join(home, "link"))
      expect(yield* Trust.isTrusted(dir, env)).toBe(false)
      yield* Trust.trust(nodePath.join(home, "link"), env)
      expect(yield* Trust.list(env)).toEqual([fs.realpathSync(dir)])
      expect(yield* Trust.isTrusted(nodePath.join(dir, "."), env)).toBe(true)
      yield* Trust.untrust(dir, env)
      expect(yield* Trust.isTrusted(dir, env)).toBe(false)
      fs.writeFileSync(Trust.trustFile(env), "{\"trusted\": 1}")
      const bad = yield* Effect.exit(Trust.list(env))
      expect(Exit.isFailure(bad) && bad.cause.toString()).toContain("trusted-workspaces.json: expected {\"trusted\"")
    }).pipe(Effect.provide(Layer.mergeAll(NodeServices.layer, Layer.succeed(Screen.Screen, liveScreen().screen)))))
})

describe("events to stdout", () => {
  it("'-' and the very file descriptor 1 is open on are stdout; other files are not", () => {
    expect(isStdout("-")).toBe(true)
    expect(isStdout(nodePath.join(tempDir(), "events.jsonl"))).toBe(false)
    const fd1 = fs.fstatSync(1)
    const viaProc = fs.existsSync("/proc/self/fd/1") ? fs.statSync("/proc/self/fd/1") : undefined
    if (viaProc !== undefined) expect(isStdout("/proc/self/fd/1")).toBe(viaProc.ino === fd1.ino && viaProc.dev === fd1.dev)
  })
})

describe("status line and prompts", () => {
  it.effect("a status line never overwrites an open prompt, nor stdout's partial line; the next output re-enables it", () =>
    Effect.gen(function*() {
      const { out, screen } = liveScreen()
      yield* screen.prompt("? allow exec? [y/N] ")
      yield* screen.status("⠋ waiting")
      expect(out.stderr).toBe("? allow exec? [y/N] ")
      yield* screen.line("(denied exec)")
      yield* screen.status("⠋ waiting")
      expect(out.stderr.endsWith("\r\u001b[K⠋ waiting")).toBe(true)
      yield* screen.text("partial")
      const before = out.stderr
      yield* screen.status("⠙ waiting")
      expect(out.stderr).toBe(before)
    }))
})
