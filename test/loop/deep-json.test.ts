/**
 * JSON nested thousands of levels deep, from a model (tool arguments, a typed answer) or in the
 * user's `--output-schema` (a `$ref` that goes round): a typed error the model or the user sees,
 * never a stack overflow that fails the turn or poisons the session.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Redacted, Schema, Stream } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"
import * as NodeFs from "node:fs"
import * as NodePath from "node:path"
import * as OutputSchema from "../../src/cli/output/outputSchema.ts"
import { AgentLoop, Anthropic, Message, Tool } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { jsonTooDeep, MAX_JSON_DEPTH } from "../../src/domain/text.ts"
import * as BedrockWire from "../../src/layers/providers/bedrockWire.ts"
import * as GeminiWire from "../../src/layers/providers/geminiWire.ts"
import { tempDir } from "../support/toolWorkspace.ts"

/** `{"x": […]}` nesting `depth` levels in all. */
const nested = (depth: number) => `{"x":${"[".repeat(depth - 1)}${"]".repeat(depth - 1)}}`

const typed = Tool.make({
  name: "typed",
  description: "Takes a string",
  parameters: Schema.Struct({ x: Schema.String }),
  readOnly: true,
  execute: ({ x }) => Effect.succeed(`got ${x}`)
})
const loose = Tool.make({
  name: "loose",
  description: "Takes anything",
  parameters: Schema.Struct({ x: Schema.Unknown }),
  readOnly: true,
  execute: () => Effect.succeed("took it")
})

const toolResults = (messages: ReadonlyArray<Message.Message>) =>
  messages.flatMap((m) => m.role === "tool" ? [Message.textOf(m.content)] : [])

describe("deeply nested JSON", () => {
  it("the depth scan: brackets in strings do not count, the bound itself passes", () => {
    expect(jsonTooDeep(nested(MAX_JSON_DEPTH))).toBe(false)
    expect(jsonTooDeep(nested(MAX_JSON_DEPTH + 1))).toBe(true)
    expect(jsonTooDeep(`{"a":"${"[".repeat(10_000)}\\"{{{"}`)).toBe(false)
    expect(jsonTooDeep("[".repeat(1_000_000))).toBe(true)
  })

  it.effect("tool arguments 5,000 levels deep are an error result the model sees; at the bound the tool decodes them", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("s", "go")
      expect(result.status).toBe("completed")
      const [deepTyped, deepLoose, atBoundTyped, atBoundLoose] = toolResults(result.messages)
      expect(deepTyped).toBe(`Invalid arguments for tool "typed": nested deeper than ${MAX_JSON_DEPTH} levels`)
      expect(deepLoose).toBe(`Invalid arguments for tool "loose": nested deeper than ${MAX_JSON_DEPTH} levels`)
      expect(atBoundTyped).toMatch(/^Invalid arguments for tool "typed": x: Expected string/)
      expect(atBoundLoose).toBe("took it")
      expect(result.finalMessage?.content).toBe("done")
    }).pipe(Effect.provide(Testing.layer({
      tools: [typed, loose],
      script: [
        {
          toolCalls: [
            { name: "typed", arguments: nested(5000) },
            { name: "loose", arguments: nested(5000) },
            { name: "typed", arguments: nested(MAX_JSON_DEPTH) },
            { name: "loose", arguments: nested(MAX_JSON_DEPTH) }
          ]
        },
        { content: "done" }
      ]
    }))))

  it.effect("a stored call with such arguments still makes an Anthropic request on the next turn", () =>
    Effect.gen(function*() {
      const bodies: Array<string> = []
      const client = HttpClient.make((request) => {
        if (request.body._tag === "Uint8Array") bodies.push(new TextDecoder().decode(request.body.body))
        return Effect.succeed(HttpClientResponse.fromWeb(request, new Response("{}", { status: 400 })))
      })
      const call = { id: "c1", name: "loose", arguments: nested(5000) }
      const provider = yield* Anthropic.make({ apiKey: Redacted.make("sk-ant-test") }).pipe(Effect.provideService(HttpClient.HttpClient, client))
      const messages = [Message.user("go"), Message.assistant("", [call]), Message.toolResult(call, "refused", true), Message.user("next")]
      yield* Effect.flip(Stream.runDrain(provider.stream({ model: "claude-x", messages, tools: [{ name: "loose", description: "d", parameters: { type: "object" } }] })))
      expect(bodies).toHaveLength(1)
      expect(bodies[0]).toContain(`"tool_use"`)
      expect(bodies[0]).not.toContain("[[[[")
    }))

  it("the Bedrock and Gemini request bodies serialise such a stored call, and a deep Gemini event is refused typed", () => {
    const call = { id: "c1", name: "loose", arguments: nested(5000) }
    const messages = [Message.user("go"), Message.assistant("", [call]), Message.toolResult(call, "refused", true), Message.user("next")]
    const tools = [{ name: "loose", description: "d", parameters: { type: "object" } }]
    for (const body of [BedrockWire.requestBody({ model: "anthropic.claude-x", messages, tools }), GeminiWire.requestBody({ model: "gemini-2.5-pro", messages, tools })]) {
      const json = JSON.stringify(body)
      expect(json).not.toContain("[[[[")
    }
    const deepArgs = `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"loose","args":${nested(5000)}}}]}}]}`
    const step = GeminiWire.makeDecoder()().feed({ _tag: "Event", event: "message", id: undefined, data: deepArgs })
    expect(step).toMatchObject({ _tag: "MalformedResponse" })
  })

  it.effect("a typed answer 5,000 levels deep is sent back to the model, and the next answer is taken", () =>
    Effect.gen(function*() {
      const Tree = Schema.Struct({ name: Schema.String })
      const result = yield* (yield* AgentLoop).turn("s", "go", { output: Tree })
      expect(result.status).toBe("completed")
      expect(result.output).toEqual({ name: "ok" })
      expect(toolResults(result.messages)[0]).toMatch(new RegExp(`^The answer nests deeper than ${MAX_JSON_DEPTH} levels`))
    }).pipe(Effect.provide(Testing.layer({
      script: [
        { toolCalls: [{ name: "respond", arguments: `{"name":${"[".repeat(5000)}${"]".repeat(5000)}}` }] },
        { output: { name: "ok" } }
      ]
    }))))
})

describe("--output-schema that goes round", () => {
  const loadFile = (json: unknown) =>
    Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir("output-schema-")
      const file = NodePath.join(dir, "schema.json")
      NodeFs.writeFileSync(file, typeof json === "string" ? json : JSON.stringify(json))
      return yield* Effect.exit(OutputSchema.load(file))
    })).pipe(Effect.provide(NodeServices.layer))

  const failure = (exit: Exit.Exit<unknown, unknown>) => {
    expect(Exit.isFailure(exit)).toBe(true)
    const error = Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail") : undefined
    const message = (error as { readonly error: { readonly message: string } } | undefined)?.error.message ?? ""
    expect(message).not.toContain("\n")
    return message
  }

  it.effect("a $ref cycle without a value between is one line naming the cycle", () =>
    Effect.gen(function*() {
      expect(failure(yield* loadFile({ $defs: { a: { $ref: "#/$defs/a" } }, $ref: "#/$defs/a" }))).toMatch(
        /go round without holding a value \(#\/\$defs\/a → #\/\$defs\/a\)$/
      )
      expect(failure(yield* loadFile({ $defs: { a: { anyOf: [{ $ref: "#/$defs/b" }, { type: "string" }] }, b: { allOf: [{ $ref: "#/$defs/a" }] } }, $ref: "#/$defs/a" })))
        .toMatch(/#\/\$defs\/a → #\/\$defs\/b → #\/\$defs\/a\)$/)
      expect(failure(yield* loadFile({ definitions: { x: { $ref: "#/definitions/x" } }, type: "object" }))).toMatch(/#\/definitions\/x/)
      expect(failure(yield* loadFile("[".repeat(100_000) + "]".repeat(100_000)))).toMatch(/nests deeper than 256 levels$/)
      expect(failure(yield* loadFile({ $ref: "#" }))).toMatch(/Unsupported \$ref/)
    }))

  it.effect("a recursive tree is fine, and an answer at the depth bound decodes against it", () =>
    Effect.gen(function*() {
      const tree = {
        $defs: { node: { type: "object", properties: { kids: { type: "array", items: { $ref: "#/$defs/node" } } }, required: ["kids"] } },
        $ref: "#/$defs/node"
      }
      const loaded = yield* loadFile(tree)
      expect(Exit.isSuccess(loaded)).toBe(true)
      if (!Exit.isSuccess(loaded)) return
      // {"kids":[ … ]} is two levels per node
      let value: unknown = { kids: [] }
      for (let i = 1; i < MAX_JSON_DEPTH / 2; i++) value = { kids: [value] }
      expect(jsonTooDeep(JSON.stringify(value))).toBe(false)
      const decoded = yield* Effect.exit(Schema.decodeUnknownEffect(loaded.value.schema)(value))
      expect(Exit.isSuccess(decoded)).toBe(true)
    }))
})
