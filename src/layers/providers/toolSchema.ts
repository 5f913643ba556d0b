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
