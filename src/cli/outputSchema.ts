/**
 * `run --output-schema FILE`: a JSON Schema file as the turn's typed answer. The file is sent to
 * the model as it is written, and imported as an Effect Schema (Effect's own JSON Schema import,
 * Draft 2020-12, or Draft-07 when its `$schema` says so) that decodes the answer.
 */
import { Effect, JsonSchema, type Schema, SchemaRepresentation } from "effect"
import { problemOf, readConfined, textOf } from "../layers/readConfined.ts"
import { fail } from "./failure.ts"

/** A typed answer read from a file: the Schema that decodes it and the JSON Schema the model sees. */
export interface OutputSchema {
  readonly schema: Schema.Decoder<unknown>
  readonly jsonSchema: Record<string, unknown>
}

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const reason = (error: unknown): string => error instanceof Error ? error.message : String(error)

/** The largest schema file read: never more, whatever `stat` says of it. */
export const MAX_OUTPUT_SCHEMA_BYTES = 1024 * 1024

/** Reads and imports the schema file; a bad one fails with one line naming the file and what is wrong. */
export const load = (file: string) =>
  Effect.gen(function*() {
    const bad = (why: string) => fail(`--output-schema ${file}: ${why}`)
    const read = yield* readConfined(file, { maxBytes: MAX_OUTPUT_SCHEMA_BYTES })
    const problem = problemOf(read, MAX_OUTPUT_SCHEMA_BYTES)
    if (problem !== undefined) return yield* bad(`cannot read it (${problem})`)
    const text = textOf(read) ?? ""
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch (error) {
      return yield* bad(`not JSON (${reason(error)})`)
    }
    if (!isObject(json)) return yield* bad("a JSON Schema must be a JSON object")
    const draft07 = typeof json["$schema"] === "string" && /draft-0[4-7]/.test(json["$schema"])
    try {
      const document = draft07 ? JsonSchema.fromSchemaDraft07(json) : JsonSchema.fromSchemaDraft2020_12(json)
      // The file is the user's own: its patterns are applied as written.
      const schema = SchemaRepresentation.fromJsonSchemaDocument(document, { patterns: "apply" })
      return { schema: schema as Schema.Decoder<unknown>, jsonSchema: json } satisfies OutputSchema
    } catch (error) {
      return yield* bad(`not a JSON Schema the loop can use (${reason(error)})`)
    }
  })
