/**
 * JSON Schema rewritten into Gemini's OpenAPI subset: as Google's client converts what it can
 * (checked against it), and what it would pass on that the API refuses ($ref, oneOf, allOf,
 * const, number enums, unknown formats, empty objects).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Tool } from "effect-agent-loop"
import { geminiParameters, geminiSchema } from "../../src/layers/providers/geminiSchema.ts"
import { referenceRequest } from "../support/geminiWire.ts"

describe("Gemini schemas", () => {
  it.live("what Google's client converts (types, nullable unions, type lists, additionalProperties) comes out the same", () =>
    Effect.gen(function*() {
      const schema = {
        type: "object",
        properties: {
          name: { type: "string", minLength: 1, description: "Who" },
          tags: { type: "array", items: { type: "string" }, maxItems: 3 },
          note: { anyOf: [{ type: "null" }, { type: "object", properties: { text: { type: "string" } }, additionalProperties: false }] },
          size: { type: ["integer", "null"], minimum: 0 },
          either: { type: ["string", "number"] },
          mode: { type: "string", enum: ["fast", "slow"], format: "enum" }
        },
        required: ["name"],
        additionalProperties: false
      }
      const reference = yield* referenceRequest({
        model: "gemini-2.5-flash",
        contents: [{ role: "user", parts: [{ text: "x" }] }],
        config: { tools: [{ functionDeclarations: [{ name: "f", description: "d", parameters: structuredClone(schema) }] }] }
      })
      expect(geminiParameters(schema)).toEqual(reference.json.tools[0].functionDeclarations[0].parameters)
    }))

  it("$ref and $defs are inlined, a recursive one stops untyped; oneOf is anyOf; allOf is merged", () => {
    const schema = {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      $defs: {
        Point: { type: "object", properties: { x: { type: "number" }, y: { type: "number" } }, required: ["x", "y"] },
        Node: { type: "object", description: "A tree", properties: { children: { type: "array", items: { $ref: "#/$defs/Node" } } } }
      },
      properties: {
        at: { $ref: "#/$defs/Point", description: "Where" },
        tree: { $ref: "#/$defs/Node" },
        shape: { oneOf: [{ type: "string" }, { type: "integer" }] },
        both: { allOf: [{ type: "object", properties: { a: { type: "string" } }, required: ["a"] }, { properties: { b: { type: "boolean" } } }] }
      }
    }
    expect(geminiSchema(schema)).toEqual({
      type: "OBJECT",
      properties: {
        at: { type: "OBJECT", description: "Where", properties: { x: { type: "NUMBER" }, y: { type: "NUMBER" } }, required: ["x", "y"] },
        tree: { type: "OBJECT", description: "A tree", properties: { children: { type: "ARRAY", items: {} } } },
        shape: { anyOf: [{ type: "STRING" }, { type: "INTEGER" }] },
        both: { type: "OBJECT", properties: { a: { type: "STRING" }, b: { type: "BOOLEAN" } }, required: ["a"] }
      }
    })
  })

  it("const is a one-value enum; number enums, unknown formats and keywords the API lacks are dropped; required names only known properties", () => {
    expect(geminiSchema({
      type: "object",
      properties: {
        kind: { const: "circle" },
        level: { type: "integer", enum: [1, 2, 3], exclusiveMinimum: 0, multipleOf: 1 },
        when: { type: "string", format: "date-time" },
        site: { type: "string", format: "uri", examples: ["https://x"] },
        maybe: { type: "string", enum: ["a", null] },
        map: { type: "object", patternProperties: { ".*": { type: "string" } }, additionalProperties: { type: "string" } }
      },
      required: ["kind", "ghost"]
    })).toEqual({
      type: "OBJECT",
      properties: {
        kind: { type: "STRING", enum: ["circle"] },
        level: { type: "INTEGER" },
        when: { type: "STRING", format: "date-time" },
        site: { type: "STRING" },
        maybe: { type: "STRING", enum: ["a"], nullable: true },
        map: { type: "OBJECT" }
      },
      required: ["kind"]
    })
  })

  it("a tool of no parameters has no parameters (the API refuses an object without properties); an Effect Schema tool converts", () => {
    expect(geminiParameters({ type: "object", properties: {}, additionalProperties: false })).toBeUndefined()
    expect(geminiParameters({ type: "object" })).toBeUndefined()
    const tool = Tool.make({
      name: "move",
      description: "Moves",
      parameters: Schema.Struct({ to: Schema.String, steps: Schema.optionalKey(Schema.Int), mode: Schema.Literals(["walk", "run"]) }),
      execute: () => Effect.succeed("ok")
    })
    const converted = geminiParameters(tool.definition.parameters)
    expect(converted).toMatchObject({
      type: "OBJECT",
      properties: { to: { type: "STRING" }, steps: { type: "INTEGER" }, mode: { type: "STRING", enum: ["walk", "run"] } },
      required: ["to", "mode"]
    })
    expect(JSON.stringify(converted)).not.toMatch(/\$ref|\$defs|additionalProperties|\$schema/)
  })
})
