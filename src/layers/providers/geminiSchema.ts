/**
 * JSON Schema as Google's Gemini API takes it in `functionDeclarations[].parameters` and
 * `responseSchema`: its `Schema` object, a subset of OpenAPI 3.0. Types are upper case, a null
 * type is `nullable: true`, there is no `$ref`, `oneOf`, `allOf`, `const` or `additionalProperties`,
 * enums are strings, and only a few formats are known. Tools bring any JSON Schema (Effect
 * Schemas, zod via MCP servers, hand-written), so it is rewritten here into what the API accepts,
 * the way Google's own client (`@google/genai`) converts a JSON Schema, and further where that
 * client would send what the API refuses.
 */

/** The keywords of Gemini's `Schema`; any other is dropped. */
const KEYWORDS = new Set([
  "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems", "properties", "required",
  "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example", "anyOf", "propertyOrdering",
  "default", "items", "minimum", "maximum"
])

/** The types of `Schema.type`. */
const TYPES = new Set(["STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"])

/** The formats the API knows, by type; a schema with another format is sent without it. */
const FORMATS: Readonly<Record<string, ReadonlySet<string>>> = {
  STRING: new Set(["enum", "date-time"]),
  NUMBER: new Set(["float", "double"]),
  INTEGER: new Set(["int32", "int64"])
}

type Json = Record<string, unknown>

const isRecord = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

/** How deep a schema is followed; deeper parts are sent as untyped. Far above any real tool. */
const MAX_DEPTH = 32

interface Context {
  readonly definitions: Json
  /** The `$ref`s being expanded, to stop at a recursive one. */
  readonly expanding: ReadonlySet<string>
  readonly depth: number
}

/** The definition a local `$ref` (`#/$defs/Name`, `#/definitions/Name`) points at. */
const resolveRef = (ref: string, definitions: Json): Json | undefined => {
  const match = /^#\/(?:\$defs|definitions)\/(.+)$/.exec(ref)
  if (!match) return undefined
  const target = definitions[match[1]!.replace(/~1/g, "/").replace(/~0/g, "~")]
  return isRecord(target) ? target : undefined
}

/** The branches of `allOf` folded into one schema: their properties and required names joined. */
const mergeAllOf = (node: Json, context: Context): Json => {
  const { allOf, ...rest } = node
  if (!Array.isArray(allOf)) return rest
  let merged: Json = rest
  for (const branch of allOf) {
    const part = isRecord(branch) ? expandRef(branch, context) : {}
    const properties = { ...(isRecord(merged["properties"]) ? merged["properties"] : {}), ...(isRecord(part["properties"]) ? part["properties"] : {}) }
    const required = [...(Array.isArray(merged["required"]) ? merged["required"] : []), ...(Array.isArray(part["required"]) ? part["required"] : [])]
    merged = {
      ...part,
      ...merged,
      ...(Object.keys(properties).length > 0 ? { properties } : {}),
      ...(required.length > 0 ? { required: [...new Set(required)] } : {})
    }
  }
  return merged
}

/** A schema with a `$ref` replaced by its definition (siblings of `$ref` kept over it). */
const expandRef = (node: Json, context: Context): Json => {
  const ref = node["$ref"]
  if (typeof ref !== "string") return node
  const { $ref: _, ...siblings } = node
  const target = resolveRef(ref, context.definitions)
  return target === undefined ? siblings : { ...target, ...siblings }
}

const upper = (type: unknown): string | undefined => {
  if (typeof type !== "string") return undefined
  const name = type.toUpperCase()
  return TYPES.has(name) ? name : undefined
}

const convert = (input: unknown, context: Context): Json => {
  if (!isRecord(input) || context.depth > MAX_DEPTH) return {}
  const ref = input["$ref"]
  // A recursive type cannot be written without `$ref`: the inner occurrence is left untyped.
  if (typeof ref === "string" && context.expanding.has(ref)) return pick(input, ["description"])
  const inner: Context = {
    ...context,
    depth: context.depth + 1,
    expanding: typeof ref === "string" ? new Set([...context.expanding, ref]) : context.expanding
  }
  let node = mergeAllOf(expandRef(input, context), inner)
  const out: Json = {}
  if (Array.isArray(node["oneOf"]) && !Array.isArray(node["anyOf"])) {
    const { oneOf, ...rest } = node
    node = { ...rest, anyOf: oneOf }
  }
  // `anyOf` of a schema and null is that schema, nullable (as Google's client writes it)
  let anyOf = Array.isArray(node["anyOf"]) ? node["anyOf"].filter(isRecord) : undefined
  if (anyOf !== undefined) {
    const others = anyOf.filter((branch) => branch["type"] !== "null")
    if (others.length < anyOf.length) out["nullable"] = true
    if (others.length === 1 && anyOf.length === 2) {
      const { anyOf: _, ...rest } = node
      node = { ...rest, ...expandRef(others[0]!, context) }
      anyOf = undefined
    } else anyOf = others
  }
  const type = node["type"]
  if (Array.isArray(type)) {
    if (type.includes("null")) out["nullable"] = true
    const types = type.flatMap((t) => upper(t) ?? [])
    if (types.length === 1) out["type"] = types[0]
    else if (types.length > 1 && anyOf === undefined) anyOf = types.map((t) => ({ type: t }))
  } else if (anyOf === undefined) {
    const name = upper(type)
    if (name !== undefined) out["type"] = name
  }
  for (const [key, value] of Object.entries(node)) {
    if (value === undefined || value === null || key === "type" || key === "anyOf" || !KEYWORDS.has(key)) continue
    switch (key) {
      case "properties": {
        if (!isRecord(value)) break
        out["properties"] = Object.fromEntries(Object.entries(value).map(([name, schema]) => [name, convert(schema, inner)]))
        break
      }
      case "items":
        out["items"] = convert(Array.isArray(value) ? value[0] : value, inner)
        break
      case "required":
        if (Array.isArray(value)) out["required"] = value.filter((name) => typeof name === "string")
        break
      case "enum": {
        if (!Array.isArray(value)) break
        if (value.includes(null)) out["nullable"] = true
        const values = value.filter((v) => v !== null)
        // the API takes string enums only
        if (values.length > 0 && values.every((v) => typeof v === "string")) out["enum"] = values
        break
      }
      case "format":
        if (typeof out["type"] === "string" && FORMATS[out["type"]]?.has(String(value))) out["format"] = value
        break
      default:
        out[key] = value
    }
  }
  if (anyOf !== undefined) out["anyOf"] = anyOf.map((branch) => convert(branch, inner))
  if (typeof node["const"] === "string" && out["enum"] === undefined) {
    out["enum"] = [node["const"]]
    out["type"] ??= "STRING"
  }
  if (Array.isArray(out["required"]) && isRecord(out["properties"])) {
    const names = out["properties"]
    out["required"] = (out["required"] as Array<string>).filter((name) => name in names)
  }
  return out
}

const pick = (node: Json, keys: ReadonlyArray<string>): Json =>
  Object.fromEntries(keys.flatMap((key) => node[key] === undefined ? [] : [[key, node[key]]]))

/** A JSON Schema as Gemini's `Schema`; the input is not changed. */
export const geminiSchema = (schema: Record<string, unknown>): Record<string, unknown> => {
  const definitions = { ...(isRecord(schema["definitions"]) ? schema["definitions"] : {}), ...(isRecord(schema["$defs"]) ? schema["$defs"] : {}) }
  return convert(schema, { definitions, expanding: new Set(), depth: 0 })
}

/**
 * A tool's `parameters`, or `undefined` when it takes none: the API refuses an object schema
 * without properties, and a declaration without `parameters` is a function of no arguments.
 */
export const geminiParameters = (schema: Record<string, unknown>): Record<string, unknown> | undefined => {
  const converted = geminiSchema(schema)
  const properties = converted["properties"]
  return converted["type"] === "OBJECT" && (!isRecord(properties) || Object.keys(properties).length === 0) && converted["anyOf"] === undefined
    ? undefined
    : converted
}
