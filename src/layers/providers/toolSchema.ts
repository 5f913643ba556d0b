/**
 * Tool parameter schemas as each vendor accepts them, in one place. Tools bring JSON Schema from
 * anywhere (Effect Schemas, MCP servers built with zod, hand-written), and strict servers refuse
 * keys they do not know: `$schema` (which MCP servers add) everywhere, and `additionalProperties`
 * on some OpenAI-compatible servers (Gemini's among them).
 */

/** What a vendor accepts beyond the core of JSON Schema. */
export interface SchemaPolicy {
  /** Keep `additionalProperties`; when false it is removed at every level. */
  readonly additionalProperties: boolean
}

/** Keywords whose value maps names to schemas: the names are not keywords and are kept as they are. */
const SCHEMA_MAPS = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"])

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const clean = (value: unknown, policy: SchemaPolicy): unknown => {
  if (Array.isArray(value)) return value.map((item) => clean(item, policy))
  if (!isRecord(value)) return value
  const out: Record<string, unknown> = {}
  for (const [key, child] of Object.entries(value)) {
    if (key === "$schema") continue
    if (key === "additionalProperties" && !policy.additionalProperties) continue
    // A property may well be called "$schema": names under a map are kept, their schemas cleaned.
    out[key] = SCHEMA_MAPS.has(key) && isRecord(child)
      ? Object.fromEntries(Object.entries(child).map(([name, schema]) => [name, clean(schema, policy)]))
      : key === "enum" || key === "const" || key === "default" || key === "examples"
      ? child
      : clean(child, policy)
  }
  return out
}

/** The schema without the keys `policy` says the vendor rejects; the input is not changed. */
export const toolSchemaFor = (schema: Record<string, unknown>, policy: SchemaPolicy): Record<string, unknown> =>
  clean(schema, policy) as Record<string, unknown>

/** The keywords OpenAI's strict structured outputs accept (its "supported schemas"). */
const STRICT_KEYWORDS = new Set([
  "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "$ref", "$defs",
  "description", "title", "pattern", "format", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
  "exclusiveMinimum", "minItems", "maxItems"
])

/** OpenAI's limit on nested objects in a strict schema. */
const STRICT_MAX_DEPTH = 10

const strictNode = (node: unknown, depth: number): boolean => {
  if (!isRecord(node) || depth > STRICT_MAX_DEPTH) return false
  if (!Object.keys(node).every((key) => STRICT_KEYWORDS.has(key))) return false
  const properties = node["properties"]
  const objectType = node["type"] === "object" || (Array.isArray(node["type"]) && node["type"].includes("object"))
  if (objectType || properties !== undefined) {
    // Every object closed, and every property required (optional ones are written as nullable).
    if (node["additionalProperties"] !== false || !isRecord(properties ?? {})) return false
    const required = node["required"] ?? []
    const names = Object.keys(properties ?? {})
    if (!Array.isArray(required) || required.length !== names.length || !names.every((name) => required.includes(name))) return false
    if (!names.every((name) => strictNode((properties as Record<string, unknown>)[name], depth + 1))) return false
  }
  if (node["items"] !== undefined && !strictNode(node["items"], depth + 1)) return false
  if (node["anyOf"] !== undefined && !(Array.isArray(node["anyOf"]) && node["anyOf"].every((branch) => strictNode(branch, depth)))) return false
  return true
}

/**
 * Whether OpenAI accepts `schema` with `strict: true`: an object at the root, every object with
 * `additionalProperties: false` and all of its properties required, only the supported keywords,
 * at most 10 levels deep. A schema that is not is sent with `strict: false` (followed as a guide,
 * not enforced), since strict mode rejects the whole request otherwise.
 */
export const isOpenAiStrict = (schema: Record<string, unknown>): boolean => {
  if (schema["type"] !== "object") return false
  const { $defs, ...root } = schema
  if ($defs !== undefined && !(isRecord($defs) && Object.values($defs).every((definition) => strictNode(definition, 1)))) return false
  return strictNode(root, 0)
}
