/**
 * Records `examples/demo.cassette.jsonl`, the cassette `npm run demo` replays.
 *
 * It starts a scripted OpenAI-compatible server on 127.0.0.1 whose fake model lists the
 * workspace, reads the Markdown file it finds there, and answers from what it read; then it runs
 * the real CLI against it with `--record`. Run it again after changing the demo workspace, the
 * system prompt or the tools:
 *
 *     npx node examples/record-demo.ts
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { type Received, type Reply, start } from "../test/support/openaiServer.ts"

/** What the demo asks; `npm run demo` must pass the same prompt, workspace and tools. */
export const prompt = "What is in this workspace, and what is the project about?"

const root = fileURLToPath(new URL("..", import.meta.url))
const cassette = "examples/demo.cassette.jsonl"

interface WireMessage {
  readonly role: string
  readonly content: string | null
  readonly tool_calls?: ReadonlyArray<{ readonly function: { readonly name: string } }>
}

/** Lines of a tool result without `read_file`'s line numbers. */
const lines = (text: string) => text.split("\n").map((line) => line.replace(/^\s*\d+\s*[\t|:]\s?/, ""))

/** The fake model: it decides from the conversation so far, as a real one would. */
const model = (request: Received): Reply => {
  const messages: ReadonlyArray<WireMessage> = request.body.messages
  const last = messages.at(-1)!
  if (last.role === "user") {
    return { text: ["I'll start by ", "listing the workspace."], toolCalls: [{ name: "list_dir", arguments: { path: "." } }] }
  }
  const calledBefore = messages.at(-2)?.tool_calls?.[0]?.function.name
  const result = last.content ?? ""
  if (calledBefore === "list_dir") {
    const markdown = lines(result).find((line) => line.endsWith(".md")) ?? "README.md"
    return { text: `There is a ${markdown}; let me read it.`, toolCalls: [{ name: "read_file", arguments: { path: markdown } }] }
  }
  const listing = lines(messages.filter((m) => m.role === "tool")[0]?.content ?? "").filter((line) => line !== "")
  const text = lines(result)
  const title = text.find((line) => line.startsWith("# "))?.slice(2) ?? "this project"
  const afterTitle = text.slice(text.findIndex((line) => line.startsWith("# ")) + 1)
  const start = afterTitle.findIndex((line) => line.trim() !== "")
  const end = afterTitle.findIndex((line, i) => i > start && line.trim() === "")
  const summary = afterTitle.slice(start, end < 0 ? undefined : end).map((line) => line.trim()).join(" ")
  return {
    text: [
      `The workspace holds ${listing.map((entry) => `\`${entry}\``).join(", ")}.\n\n`,
      `The project is **${title}**. ${summary}\n\n`,
      "The notes say the sensors work; next come a weekly summary and a frost alert."
    ]
  }
}

/** The environment without API keys: the fake server needs none, and none should reach it. */
const withoutKeys = (env: NodeJS.ProcessEnv) =>
  Object.fromEntries(Object.entries(env).filter(([name]) => name !== "OPENAI_API_KEY" && name !== "ANTHROPIC_API_KEY"))

const server = await start((request) => model(request))
const child = spawn(
  process.execPath,
  [
    "src/cli/main.ts",
    "run",
    "--base-url",
    server.url,
    "--model",
    "demo-model",
    "--record",
    cassette,
    "--workspace",
    "examples/demo-workspace",
    "--tools",
    "list_dir,read_file",
    "--ephemeral",
    prompt
  ],
  { cwd: root, stdio: "inherit", env: withoutKeys(process.env) }
)
const code = await new Promise<number | null>((resolve) => child.on("exit", resolve))
await server.close()
process.stdout.write(`\nrecorded ${server.requests.length} calls to ${cassette} (exit ${code})\n`)
process.exit(code ?? 1)
