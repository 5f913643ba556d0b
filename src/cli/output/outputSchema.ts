/**
 * `run --output-schema FILE`: a JSON Schema file as the turn's typed answer. The file is sent to
 * the model as it is written, and imported as an Effect Schema (Effect's own JSON Schema import,
 * Draft 2020-12, or Draft-07 when its `$schema` says so) that decodes the answer, in a worker thread
 * under a deadline (`outputDecoder.ts`).
 */
import * as Effect from "effect/Effect"
import * as JsonSchema from "effect/JsonSchema"
import type * as Schema from "effect/Schema"
import * as SchemaRepresentation from "effect/SchemaRepresentation"
import { jsonTooDeep, MAX_JSON_DEPTH } from "../../domain/text.ts"
import { problemOf, readConfined, textOf } from "../../layers/internal/readConfined.ts"
import { DEFAULT_GREP_MATCH_TIMEOUT } from "../../tools/grep.ts"
import { fail } from "../terminal/failure.ts"
import { workerSchema } from "./outputDecoder.ts"

/** A typed answer read from a file: the Schema that decodes it and the JSON Schema the model sees. */
export interface OutputSchema {
  readonly schema: Schema.Decoder<unknown>
  readonly jsonSchema: Record<string, unknown>
}

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** The first line of an error's message: Schema errors add `at …` lines. */
const reason = (error: unknown): string => (error instanceof Error ? error.message : String(error)).split("\n")[0]!

/** Keywords whose subschemas apply to the same value: a `$ref` under them holds no value yet. */
const IN_PLACE_LISTS = ["allOf", "anyOf", "oneOf"] as const
const IN_PLACE = ["not", "if", "then", "else"] as const

/** The `$ref`s that apply to the value `node` describes itself (not to a property or an item of it). */
const refsInPlace = (node: unknown, out: Array<string> = []): Array<string> => {
  if (!isObject(node)) return out
  if (typeof node["$ref"] === "string") out.push(node["$ref"])
  for (const key of IN_PLACE_LISTS) {
    const list = node[key]
    if (Array.isArray(list)) for (const item of list) refsInPlace(item, out)
  }
  for (const key of IN_PLACE) refsInPlace(node[key], out)
  return out
}

/** The definition a local `$ref` (`#/$defs/Name`, `#/definitions/Name`) names, if any. */
const definition = (json: Record<string, unknown>, ref: string): unknown => {
  const at = /^#\/(\$defs|definitions)\/([^/]*)$/.exec(ref)
  if (at === null) return undefined
  const defs = json[at[1]!]
  const name = decodeURIComponent(at[2]!).replaceAll("~1", "/").replaceAll("~0", "~")
  return isObject(defs) && Object.hasOwn(defs, name) ? defs[name] : undefined
}

/**
 * A chain of `$ref`s that comes back to where it started without holding a value (`a` is `b`, `b`
 * is `a`): decoding anything against it would recurse until the stack overflows. A recursive
 * schema whose `$ref` sits under a property or an item (a tree) is fine.
 */
export const refCycle = (json: Record<string, unknown>): ReadonlyArray<string> | undefined => {
  // depth-first with an explicit stack: a file may chain thousands of definitions
  const state = new Map<string, "open" | "done">()
  const defs = [json["$defs"], json["definitions"]].flatMap((d, i) =>
    isObject(d) ? Object.keys(d).map((name) => `#/${i === 0 ? "$defs" : "definitions"}/${name}`) : []
  )
  for (const start of [...refsInPlace(json), ...defs]) {
    if (state.has(start)) continue
    const stack: Array<{ readonly ref: string; readonly next: Array<string> }> = [{ ref: start, next: refsInPlace(definition(json, start)) }]
    state.set(start, "open")
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!
      const ref = top.next.pop()
      if (ref === undefined) {
        state.set(top.ref, "done")
        stack.pop()
      } else if (state.get(ref) === "open") {
        const path = stack.map((frame) => frame.ref)
        return [...path.slice(path.indexOf(ref)), ref]
      } else if (!state.has(ref)) {
        state.set(ref, "open")
        stack.push({ ref, next: refsInPlace(definition(json, ref)) })
      }
    }
  }
  return undefined
}

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
    if (jsonTooDeep(text)) return yield* bad(`it nests deeper than ${MAX_JSON_DEPTH} levels`)
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch (error) {
      return yield* bad(`not JSON (${reason(error)})`)
    }
    return yield* Effect.mapError(fromJson(json), (why) => `--output-schema ${file}: ${why}`).pipe(Effect.catch((message) => fail(message)))
  })

/**
 * A JSON Schema given as a value (an A2A message's `outputSchema`) as a typed answer, checked as
 * `load` checks a file's; fails with what is wrong with it.
 */
export const fromJson = (json: unknown): Effect.Effect<OutputSchema, string> =>
  Effect.gen(function*() {
    const bad = (why: string) => Effect.fail(why)
    if (!isObject(json)) return yield* bad("a JSON Schema must be a JSON object")
    const cycle = refCycle(json)
    if (cycle !== undefined) return yield* bad(`its $refs go round without holding a value (${cycle.join(" → ")})`)
    const draft07 = typeof json["$schema"] === "string" && /draft-0[4-7]/.test(json["$schema"])
    try {
      const document = draft07 ? JsonSchema.fromSchemaDraft07(json) : JsonSchema.fromSchemaDraft2020_12(json)
      // Imported here only to report a bad schema now: compiling its patterns is safe, running them
      // on the model's answer is not, so answers are decoded in a worker under grep's deadline.
      SchemaRepresentation.fromJsonSchemaDocument(document, { patterns: "apply" })
      return { schema: workerSchema(json, draft07, DEFAULT_GREP_MATCH_TIMEOUT), jsonSchema: json } satisfies OutputSchema
    } catch (error) {
      return yield* bad(`not a JSON Schema the loop can use (${reason(error)})`)
    }
  })
