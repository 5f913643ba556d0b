/**
 * The apps the packaging test installs the package into (plain Node, CommonJS, a bundle, a
 * type-checked TypeScript app, a Vertex call without its optional peer), and every TypeScript
 * example of the docs, to type-check against the installed package.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { root } from "./cliProcess.ts"

/** Plain Node, no TypeScript: import the package and run one turn with the Scripted provider. */
export const plainConsumer = `
import { Effect, Layer } from "effect"
import { AgentLoop, AgentLoopLive, Scripted, SessionStoreMemory, ToolRegistryLive } from "effect-agent-loop"

const program = Effect.gen(function*() {
  const loop = yield* AgentLoop
  const result = yield* loop.turn("s", "Say hello")
  console.log(JSON.stringify({ status: result.status, answer: result.finalMessage?.content, from: import.meta.resolve("effect-agent-loop") }))
})

const app = AgentLoopLive.layer({ model: "scripted" }).pipe(
  Layer.provide([Scripted.layer([{ content: ["Hello ", "from the package."] }]), ToolRegistryLive.layer([]), SessionStoreMemory.layer()])
)
await Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(app)))
`

/** An app without google-auth-library that makes a Vertex call: the call, not the import, needs the library. */
export const vertexConsumer = `
import { NodeHttpClient } from "@effect/platform-node"
import { Effect, Stream } from "effect"
import { Vertex } from "effect-agent-loop"

// Google's own host: the environment's credentials are sent only there, so they are looked for
// (and their package loaded) before anything is sent
const provider = await Effect.runPromise(Vertex.make({ project: "p" }).pipe(Effect.provide(NodeHttpClient.layerUndici)))
const error = await Effect.runPromise(Effect.flip(Stream.runDrain(provider.stream({ model: "gemini-2.5-flash", messages: [{ role: "user", content: "hi" }], tools: [] }))))
console.log(JSON.stringify({ tag: error._tag, message: error.message }))
`

/** CommonJS: \`require()\` of the package (its ESM build, which Node >= 22.12 requires: no top-level await). */
export const requireConsumer = `
const { Effect, Layer } = require("effect")
const { AgentLoop, AgentLoopLive, Scripted, SessionStoreMemory, ToolRegistryLive } = require("effect-agent-loop")
const Testing = require("effect-agent-loop/testing")

const program = Effect.gen(function*() {
  const loop = yield* AgentLoop
  return yield* loop.turn("s", "Say hello")
})
const app = AgentLoopLive.layer({ model: "scripted" }).pipe(
  Layer.provide([Scripted.layer([{ content: "Hello from require." }]), ToolRegistryLive.layer([]), SessionStoreMemory.layer()])
)
Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(app))).then((result) =>
  console.log(JSON.stringify({ status: result.status, answer: result.finalMessage?.content, testing: typeof Testing.layer, from: require.resolve("effect-agent-loop") }))
)
`

/**
 * An app on a real provider layer, bundled by esbuild into one ESM file: \`OpenAiCompatible\` over
 * \`NodeHttpClient\` (undici, which is CommonJS and requires Node's built-ins at run time).
 */
export const bundledConsumer = `
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Effect, Layer, Redacted } from "effect"
import { AgentLoop, AgentLoopLive, OpenAiCompatible, SessionStoreMemory, ToolRegistryLive } from "effect-agent-loop"

const provider = OpenAiCompatible.layer({ baseUrl: process.argv[2], apiKey: Redacted.make("bundle-key") }).pipe(Layer.provide(NodeHttpClient.layerUndici))
const app = AgentLoopLive.layer({ model: "m" }).pipe(Layer.provide([provider, ToolRegistryLive.layer([]), SessionStoreMemory.layer()]))
const result = await Effect.runPromise(Effect.gen(function*() {
  return yield* (yield* AgentLoop).turn("s", "hi")
}).pipe(Effect.scoped, Effect.provide(app)))
console.log(JSON.stringify({ status: result.status, answer: result.finalMessage?.content, error: result.error }))
`

/** What an ESM bundle for Node needs so that CommonJS code inside it (undici) can \`require\` Node's built-ins (docs/concepts.md). */
export const ESM_REQUIRE_BANNER = "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);"

/**
 * A typed consumer: a tool with a Schema, a turn, the result's types. The `@ts-expect-error` lines
 * fail the compile if the package's types degrade to `any` (an import that no longer resolves).
 */
export const typedConsumer = `
import { Effect, Layer, Schema } from "effect"
import { AgentLoop, AgentLoopLive, Scripted, SessionStoreMemory, Tool, ToolRegistryLive, type Turn } from "effect-agent-loop"

const add = Tool.make({
  name: "add",
  description: "Adds two numbers",
  parameters: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
  readOnly: true,
  execute: ({ a, b }) => Effect.succeed(String(a + b))
})

const program: Effect.Effect<Turn.TurnResult, never, AgentLoop> = Effect.gen(function*() {
  const loop = yield* AgentLoop
  // @ts-expect-error a session key is a string
  loop.turn(42, "x")
  return yield* loop.turn("s", "What is 2 + 3?")
})

const app = AgentLoopLive.layer({ model: "scripted" }).pipe(
  Layer.provide([
    Scripted.layer([{ toolCalls: [{ name: "add", arguments: { a: 2, b: 3 } }] }, { content: "5" }]),
    ToolRegistryLive.layer([add]),
    SessionStoreMemory.layer()
  ])
)

const result = await Effect.runPromise(program.pipe(Effect.provide(app)))
const status: Turn.TurnStatus = result.status
// @ts-expect-error not a status
const wrong: Turn.TurnStatus = "done"
console.log(JSON.stringify({ status, wrong, answer: result.finalMessage?.content, tool: result.messages.find((message) => message.role === "tool")?.content }))
`

/**
 * Ordinary settings for an app: what `tsc --init` writes (nodenext, strict, no `.ts` imports),
 * emitting JavaScript, with the libraries' declarations checked too (`skipLibCheck` off).
 */
export const typedTsconfig = {
  compilerOptions: {
    module: "nodenext",
    target: "esnext",
    types: [],
    strict: true,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
    verbatimModuleSyntax: true,
    isolatedModules: true,
    moduleDetection: "force",
    skipLibCheck: false,
    outDir: "out"
  },
  include: ["consumer.ts"]
}

/**
 * Every ```ts example of the README, of the pages in docs/ and of the doc comments in src/, keyed
 * by a file name that says where it comes from. They are written for users, so they import "effect-agent-loop".
 */
export const documentedExamples = (): ReadonlyMap<string, string> => {
  const examples = new Map<string, string>()
  const collect = (origin: string, text: string) => {
    let n = 0
    for (const match of text.matchAll(/```ts\n([\s\S]*?)```/g)) examples.set(`${origin.replace(/\W+/g, "_")}_${n++}.ts`, match[1]!)
  }
  collect("README", fs.readFileSync(path.join(root, "README.md"), "utf8"))
  for (const page of fs.readdirSync(path.join(root, "docs"), { recursive: true, encoding: "utf8" }).filter((file) => file.endsWith(".md"))) {
    collect(`docs/${page}`, fs.readFileSync(path.join(root, "docs", page), "utf8"))
  }
  const sources = fs.readdirSync(path.join(root, "src"), { recursive: true, encoding: "utf8" }).filter((file) => file.endsWith(".ts"))
  for (const file of sources) {
    // Doc comments: drop each line's leading " * ".
    const text = fs.readFileSync(path.join(root, "src", file), "utf8").split("\n").map((line) => line.replace(/^\s*\* ?/, "")).join("\n")
    collect(`src/${file}`, text)
  }
  return examples
}
