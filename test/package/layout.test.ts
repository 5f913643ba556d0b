/**
 * The shape of the sources that start-up time depends on: every Effect module is imported by its
 * own path (`effect/Effect`, `effect/http/HttpClient`), never through a package's index (`effect`,
 * `effect/http`), which loads every module of the package (the design doc's "Performance").
 * Tests, docs and examples import as applications do and are not checked.
 *
 * And the CLI's rooms (`src/cli/README.md`): their imports point one way, down the README's table.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { root } from "../support/cliProcess.ts"

/** An import or re-export from `effect`, one of its package indexes (`effect/http`) or an `@effect/*` package's (`@effect/sql-pg`). */
const INDEX =
  String.raw`["'](effect(?:\/[a-z]+)?|@effect\/[a-z-]+)["']`
const INDEX_IMPORT = new RegExp(
  String.raw`^(?:import|export)(?:\s+type)?\s+(?:\*(?:\s+as\s+\w+)?|\{[^}]*\}|\w+(?:\s*,\s*\{[^}]*\})?)\s+from\s+${INDEX}|\bimport\(\s*${INDEX}\s*\)`,
  "gm"
)

const sources = (dir: string): ReadonlyArray<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(path.join(dir, entry.name)) : entry.name.endsWith(".ts") ? [path.join(dir, entry.name)] : []
  )

describe("the sources", () => {
  it("import each Effect module by its own path, never a package's index", () => {
    const found = sources(path.join(root, "src")).flatMap((file) =>
      [...fs.readFileSync(file, "utf8").matchAll(INDEX_IMPORT)].map((match) => `${path.relative(root, file)}: ${match[0].trim()}`)
    )
    expect(found).toEqual([])
  })

  it("the check finds an index import, a multi-line one and a dynamic one, and passes a module's own path", () => {
    const text = [
      "import { Effect } from \"effect\"",
      "import {\n  HttpClient,\n  HttpClientRequest\n} from \"effect/http\"",
      "const m = await import(\"effect/sql\")",
      "import * as Schema from \"effect/Schema\"",
      "import * as HttpClient from \"effect/http/HttpClient\"",
      "import { PgClient } from \"@effect/sql-pg\"",
      "import * as PgClient from \"@effect/sql-pg/PgClient\"",
      " * import { Effect } from \"effect\"  (a doc comment's example)"
    ].join("\n")
    expect([...text.matchAll(INDEX_IMPORT)].map((match) => match[1] ?? match[2])).toEqual(["effect", "effect/http", "effect/sql", "@effect/sql-pg"])
  })
})

/** The relative imports of a source file (static, `export … from`, and `import()`), resolved to paths. */
const importsOf = (file: string): ReadonlyArray<string> =>
  [...fs.readFileSync(file, "utf8").matchAll(/(?:\bfrom|\bimport)\s*\(?\s*["'](\.\.?\/[^"']+)["']/g)].map((match) =>
    path.resolve(path.dirname(file), match[1]!)
  )

describe("the CLI's rooms", () => {
  const cli = path.join(root, "src", "cli")
  // the rooms in the order of src/cli/README.md's table: each may import only the rooms after it
  const rooms = [...fs.readFileSync(path.join(cli, "README.md"), "utf8").matchAll(/^\| \[([a-z]+)\/\]\(\1\) \|/gm)].map((match) => match[1]!)
  const roomOf = (file: string): string | undefined => {
    const parts = path.relative(cli, file).split(path.sep)
    return parts.length > 1 && !parts[0]!.startsWith("..") ? parts[0] : undefined
  }

  it("are the folders of src/cli, each with a README, in the table of src/cli/README.md", () => {
    const folders = fs.readdirSync(cli, { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name)
    expect([...rooms].sort()).toEqual(folders.sort())
    for (const room of rooms) expect(fs.existsSync(path.join(cli, room, "README.md")), room).toBe(true)
  })

  it("import only the rooms after them in that table, and none of the files at the root of src/cli", () => {
    const wrong = rooms.flatMap((room, rank) =>
      sources(path.join(cli, room)).flatMap((file) =>
        importsOf(file).flatMap((target) => {
          if (!target.startsWith(cli + path.sep)) return []
          const other = roomOf(target)
          const allowed = other === undefined ? false : other === room || rooms.indexOf(other) > rank
          return allowed ? [] : [`${path.relative(root, file)} -> ${path.relative(root, target)}`]
        })
      )
    )
    expect(wrong).toEqual([])
  })
})
