/**
 * Text from a model, a tool, a file or a server, crafted against the regular expressions that run
 * on it. Each case feeds a megabyte of adversarial input and checks the result is right; a
 * quadratic pattern would not finish within the test's timeout (`bench/regex.ts` has the times).
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted, Result, Stream } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import * as ContextFiles from "../../src/cli/config/contextFiles.ts"
import * as Format from "../../src/cli/terminal/format.ts"
import { imageMentions } from "../../src/cli/input/images.ts"
import { clean } from "../../src/cli/terminal/safeText.ts"
import { attach } from "../../src/cli/input/stdinPrompt.ts"
import { makeExec, makeReadFile, Message, OpenAiCompatible } from "effect-agent-loop"
import { matchesPattern } from "../../src/layers/mcp/policy.ts"
import { completeUtf8Length, joinLines } from "../../src/domain/text.ts"
import { frontMatter } from "../../src/layers/fileHooks/manifest.ts"
import { capOutput } from "../../src/layers/mcp/content.ts"
import { expandConfig } from "../../src/layers/mcp/expand.ts"
import { describeBody } from "../../src/layers/providers/httpErrors.ts"
import { tempDir, text, withWorkspace, write } from "../support/toolWorkspace.ts"

const MB = 1024 * 1024
const FFFD = "\uFFFD"

describe("regular expressions on hostile text", () => {
  it("Format.truncate cuts first: a megabyte of spaces, of line breaks, or of both", () => {
    expect(Format.truncate(" ".repeat(MB) + "x", 20)).toBe(" ".repeat(19) + "…")
    expect(Format.truncate("\n".repeat(MB) + "x", 20)).toBe(" …")
    expect(Format.truncate("a" + " \n".repeat(MB / 2) + "b", 20)).toBe("a …")
    expect(Format.truncate("\t ".repeat(MB / 2) + "\nx", 5)).toBe("\t \t …")
    // what it always did, on short text
    expect(Format.truncate("a  b\n \n  c", 80)).toBe("a  b c")
    expect(Format.truncate("abcdef", 4)).toBe("abc…")
    expect(Format.args(JSON.stringify({ command: " ".repeat(MB) }), 30)).toBe(`{"command":"${" ".repeat(17)}…`)
  })

  it("joinLines keeps runs without a line break and joins those with one", () => {
    expect(joinLines("a \t b\r\n  c\u2028d")).toBe("a \t b c\u2028d")
    expect(joinLines(" ".repeat(MB))).toHaveLength(MB)
    expect(joinLines(" ".repeat(MB) + "\n")).toBe(" ")
  })

  it("a character cut in half is dropped in constant time; U+FFFD that is in the text stays", () => {
    const bytes = new TextEncoder().encode(FFFD.repeat(MB / 3) + "é€😀")
    const whole = bytes.length
    expect(completeUtf8Length(bytes)).toBe(whole)
    expect(completeUtf8Length(bytes.subarray(0, whole - 1))).toBe(whole - 4)
    expect(completeUtf8Length(bytes.subarray(0, whole - 4))).toBe(whole - 4)
    expect(completeUtf8Length(bytes.subarray(0, whole - 5))).toBe(whole - 7)
    expect(completeUtf8Length(bytes.subarray(0, whole - 8))).toBe(whole - 9)
    expect(completeUtf8Length(new Uint8Array([0x80, 0x80, 0x80, 0x80]))).toBe(4)
  })

  it.effect("read_file: a line of a megabyte of U+FFFD, cut in a character, keeps every U+FFFD", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        const count = Math.floor(MB / 3)
        write(root, "f.txt", FFFD.repeat(count) + "é".repeat(1000) + "\n")
        const prefix = "     1\t"
        const out = yield* text(makeReadFile({ maxBytes: prefix.length + count * 3 + 1 }), { path: "f.txt" })
        expect(out.startsWith(prefix + FFFD.repeat(count))).toBe(true)
        expect(out.slice(prefix.length + count).startsWith("é")).toBe(false)
        expect(out.slice(prefix.length, prefix.length + count + 1).split("").filter((c) => c === FFFD)).toHaveLength(count)
      })))

  it.effect("exec: output of a megabyte of U+FFFD cut at the cap keeps every U+FFFD before the cut", () =>
    withWorkspace(({ root }) =>
      Effect.gen(function*() {
        const count = Math.floor(MB / 3)
        write(root, "out.txt", FFFD.repeat(count) + "€".repeat(1000))
        const out = yield* text(makeExec({ maxOutputBytes: count * 3 + 2 }), { command: "cat out.txt" })
        expect(out).toContain(`\n${FFFD.repeat(count)}\n[output truncated: showing the first ${count * 3 + 2} of ${count * 3 + 3000} bytes`)
      })))

  it("MCP results: a megabyte of U+FFFD cut at the cap keeps every U+FFFD before the cut", () => {
    const count = Math.floor(MB / 3)
    const capped = capOutput({ content: FFFD.repeat(count) + "😀".repeat(1000) }, count * 3 + 3)
    expect(typeof capped.content === "string" && capped.content.startsWith(FFFD.repeat(count) + "\n[output truncated")).toBe(true)
  })

  it.effect("context files: U+FFFD up to the cut stays, the half character goes", () =>
    Effect.scoped(Effect.gen(function*() {
      const root = yield* tempDir("ctx-")
      const config = yield* tempDir("ctx-config-")
      const count = Math.floor(ContextFiles.MAX_CONTEXT_FILE_BYTES / 3)
      // the cap falls inside the four-byte character after `count` U+FFFD
      expect(ContextFiles.MAX_CONTEXT_FILE_BYTES - count * 3).toBeLessThan(4)
      nodeFs.mkdirSync(nodePath.join(root, ".git"))
      nodeFs.writeFileSync(nodePath.join(root, "AGENTS.md"), FFFD.repeat(count) + "😀" + FFFD.repeat(MB / 3))
      const files = yield* ContextFiles.discover(root, { XDG_CONFIG_HOME: config, HOME: config })
      const agents = files.find((file) => file.label.endsWith("AGENTS.md"))
      expect(agents?.content.startsWith(FFFD.repeat(count) + "\n[truncated")).toBe(true)
    })).pipe(Effect.provide(NodeServices.layer)))

  it("@image mentions: a megabyte of punctuation after a mention", () => {
    expect(imageMentions("@a.png" + ".".repeat(MB) + "x")).toEqual([])
    expect(imageMentions("see @b.png" + ")".repeat(MB))).toEqual(["b.png"])
    expect(imageMentions("see @c.jpg, and @d.gif.")).toEqual(["c.jpg", "d.gif"])
  })

  it("MCP config: a megabyte of unclosed ${VAR:- references", () => {
    const config = { type: "stdio" as const, command: "${CMD:-node}" + "${X:-".repeat(MB / 5), args: ["${A}x${B:-b}"] }
    const expanded = expandConfig(config, { A: "a" })
    expect(Result.isSuccess(expanded)).toBe(true)
    if (Result.isSuccess(expanded) && expanded.success.type === "stdio") {
      expect(expanded.success.command).toBe("node" + "${X:-".repeat(MB / 5))
      expect(expanded.success.args).toEqual(["axb"])
    }
  })

  it("MCP allow/deny patterns: many stars against a megabyte-long tool name", () => {
    const name = "a".repeat(MB)
    expect(matchesPattern("*a*a*a*a*a*a*a*a*b", name)).toBe(false)
    expect(matchesPattern("*a*a*a*a*a*a*a*a*", name)).toBe(true)
    expect(matchesPattern("a*a", name)).toBe(true)
    expect(matchesPattern("read_*", "read_file")).toBe(true)
    expect(matchesPattern("*_file", "read_file")).toBe(true)
    expect(matchesPattern("r*d*e", "read_file")).toBe(true)
    expect(matchesPattern("ab*ba", "aba")).toBe(false)
    expect(matchesPattern("*", "")).toBe(true)
    expect(matchesPattern("a.b", "axb")).toBe(false)
    expect(matchesPattern("exact", "exact")).toBe(true)
  })

  it.effect("a base URL ending in a megabyte of slashes is trimmed in one pass", () =>
    Effect.gen(function*() {
      const urls: Array<string> = []
      const client = HttpClient.make((request) => {
        urls.push(request.url)
        return Effect.succeed(HttpClientResponse.fromWeb(request, new Response("{}", { status: 400 })))
      })
      for (const baseUrl of ["http://127.0.0.1:9/v1" + "/".repeat(MB), "http://127.0.0.1:9/" + "/".repeat(MB) + "v1"]) {
        const provider = yield* OpenAiCompatible.make({ baseUrl, apiKey: Redacted.make("sk-x") }).pipe(Effect.provideService(HttpClient.HttpClient, client))
        yield* Effect.flip(Stream.runDrain(provider.stream({ model: "m", messages: [Message.user("hi")], tools: [] })))
      }
      expect(urls[0]).toBe("http://127.0.0.1:9/v1/chat/completions")
      expect(urls[1]!.endsWith("v1/chat/completions")).toBe(true)
    }))

  // Patterns that were already linear, kept so at a megabyte of their worst input.
  it("terminal cleaning, front matter, provider error bodies and stdin stay linear", () => {
    expect(clean("\u001b[0 ".repeat(MB / 4)) === "0 ".repeat(MB / 4)).toBe(true)
    expect(clean("\u001b[" + "0".repeat(MB)) === "0".repeat(MB)).toBe(true)
    expect(clean("\u001b]" + "x".repeat(MB))).toBe("")
    expect(frontMatter("---\n" + "\n---   x".repeat(MB / 8))).toBeUndefined()
    expect(frontMatter("---\nname: a\n---\n" + "-".repeat(MB))).toBe("name: a")
    expect(describeBody("context ".repeat(MB / 8)).message).toHaveLength(MB - 1)
    expect(attach("p", "\n".repeat(MB) + "x")).toBe(`p\n\n<stdin>\n${"\n".repeat(MB)}x\n</stdin>`)
  })
})
