/**
 * The names a module exports, read from its source: values (`export const`, `function`, `class`,
 * names listed without `type`) and type-only names (`export type`, `interface`, names listed with
 * `type`), following `export *` and listing `export * as N` as a value. The public entries list
 * their exports by name, so this reading is exact for them (`test/package/exports.test.ts`
 * checks it against what Node loads).
 */
import * as fs from "node:fs"
import * as path from "node:path"

export interface Exported {
  readonly values: ReadonlySet<string>
  /** Names exported only as types. */
  readonly types: ReadonlySet<string>
  /** `export * as N from "…"`: each namespace's module. */
  readonly namespaces: ReadonlyMap<string, string>
}

const withoutComments = (text: string): string => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "")

export const exportedNames = (file: string): Exported => {
  const text = withoutComments(fs.readFileSync(file, "utf8"))
  const values = new Set<string>()
  const types = new Set<string>()
  const namespaces = new Map<string, string>()
  const target = (specifier: string) => path.resolve(path.dirname(file), specifier)
  for (const m of text.matchAll(/^export\s+(?:declare\s+)?(?:async\s+)?(const|let|var|function\*?|class|enum|type|interface)\s+([\w$]+)/gm)) {
    ;(m[1] === "type" || m[1] === "interface" ? types : values).add(m[2]!)
  }
  for (const m of text.matchAll(/^export\s+(type\s+)?\{([^}]*)\}(?:\s*from\s*"([^"]+)")?/gm)) {
    for (const item of m[2]!.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
      const typeOnly = m[1] !== undefined || item.startsWith("type ")
      const name = item.replace(/^type\s+/, "").split(/\s+as\s+/).at(-1)!
      ;(typeOnly ? types : values).add(name)
    }
  }
  for (const m of text.matchAll(/^export\s+\*\s+as\s+([\w$]+)\s+from\s+"([^"]+)"/gm)) {
    values.add(m[1]!)
    namespaces.set(m[1]!, target(m[2]!))
  }
  for (const m of text.matchAll(/^export\s+\*\s+from\s+"([^"]+)"/gm)) {
    const inner = exportedNames(target(m[1]!))
    for (const v of inner.values) values.add(v)
    for (const t of inner.types) types.add(t)
  }
  for (const v of values) types.delete(v)
  return { values, types, namespaces }
}
