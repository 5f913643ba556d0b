/**
 * The reference tables of the docs, each rendered from the code it describes: the configuration
 * Schema, the `AgentEvent` union, the `Hook` interface, the CLI's command definitions, the model
 * registry and the header comments of `src/`. `scripts/docs.ts` writes them into the pages.
 */
import { Duration, Schema, SchemaAST } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { agentLoop } from "../src/cli/commands.ts"
import { Settings } from "../src/cli/config/settingsFile.ts"
import * as Public from "../src/index.ts"

/** A Markdown table cell: one line, pipes escaped. */
const cell = (text: string): string => text.replace(/\s*\n\s*/g, " ").replace(/\|/g, "\\|")

const table = (head: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string =>
  [`| ${head.join(" | ")} |`, `| ${head.map(() => "---").join(" | ")} |`, ...rows.map((row) => `| ${row.map(cell).join(" | ")} |`)].join("\n")

const code = (text: string): string => "`" + text + "`"

// ---------------------------------------------------------------------------------------------
// Schema types, as a reader of the docs writes them

/** Names of the public Schemas (`Usage.Usage`, `Message.Content`, …), so a field typed by one is shown by its name. */
const schemaNames: ReadonlyMap<SchemaAST.AST, string> = (() => {
  const names = new Map<SchemaAST.AST, string>()
  for (const [namespace, members] of Object.entries(Public)) {
    if (typeof members !== "object" || members === null) continue
    for (const [name, value] of Object.entries(members)) {
      if (Schema.isSchema(value) && !names.has(value.ast)) names.set(value.ast, `${namespace}.${name}`)
    }
  }
  return names
})()

const isDuration = (ast: SchemaAST.AST): boolean => {
  const type = SchemaAST.toType(ast)
  const members = SchemaAST.isUnion(type) ? type.types : [type]
  return members.every((member) => SchemaAST.isDeclaration(member) && member.annotations?.expected === "Duration")
}

/** What the checks of a number or string add to its type: `integer ≥ 1`, `0–2`, `non-empty`. */
const refined = (base: string, ast: SchemaAST.AST): string => {
  let text = base
  for (const check of ast.checks ?? []) {
    const constraint = check.annotations?.arbitraryConstraint as Record<string, unknown> | undefined
    if (constraint === undefined) continue
    if (constraint.number === "integer") text = "integer"
    if (typeof constraint.minimum === "number" && typeof constraint.maximum === "number") text += ` ${constraint.minimum}–${constraint.maximum}`
    else if (typeof constraint.minimum === "number") text += ` ≥ ${constraint.minimum}`
    if (constraint.minLength === 1) text = "non-empty " + text
  }
  return text
}

/** A type as text; `side` picks what users write (config) or what they receive (events). */
export const typeText = (ast: SchemaAST.AST, side: "encoded" | "type" = "type"): string => {
  const named = schemaNames.get(ast)
  if (named !== undefined) return named
  if (isDuration(ast)) return "duration"
  const node = side === "encoded" ? SchemaAST.toEncoded(ast) : SchemaAST.toType(ast)
  if (node !== ast && schemaNames.has(node)) return schemaNames.get(node)!
  switch (node._tag) {
    case "String":
      return refined("string", node)
    case "Number":
      return refined("number", node)
    case "Boolean":
      return "boolean"
    case "Unknown":
      return "unknown"
    case "Literal":
      return JSON.stringify(node.literal)
    case "Union":
      return [...new Set(node.types.map((member) => typeText(member, side)))].join(" | ")
    case "Arrays":
      return node.rest.length === 1 ? `${wrapped(typeText(node.rest[0]!, side))}[]` : "array"
    case "Objects": {
      const index = node.indexSignatures[0]
      if (index !== undefined && node.propertySignatures.length === 0) {
        return `Record<${typeText(index.parameter, side)}, ${typeText(index.type, side)}>`
      }
      const keys = node.propertySignatures.map((p) => String(p.name) + (p.type.context?.isOptional === true ? "?" : ""))
      return `{ ${keys.join(", ")} }`
    }
    default:
      return node._tag
  }
}

const wrapped = (text: string): string => (text.includes(" ") ? `(${text})` : text)

// ---------------------------------------------------------------------------------------------
// Configuration

/** The fields of a struct schema, looking through `optionalKey` and decoding defaults. */
const structFields = (schema: unknown): Record<string, Schema.Top> | undefined => {
  const candidate = schema as { readonly fields?: unknown; readonly schema?: unknown; readonly to?: unknown }
  if (typeof candidate.fields === "object" && candidate.fields !== null) return candidate.fields as Record<string, Schema.Top>
  if (candidate.schema !== undefined) return structFields(candidate.schema)
  if (candidate.to !== undefined) return structFields(candidate.to)
  return undefined
}

const millisText = (ms: number): string =>
  ms % 60_000 === 0 ? `${ms / 60_000} min` : ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`

const valueText = (value: unknown): string => {
  if (value === undefined) return "—"
  if (Duration.isDuration(value)) return millisText(Duration.toMillis(value))
  return code(JSON.stringify(value))
}

/** One row per field of `AgentLoopConfig`, nested structs (`retry.maxAttempts`) included. */
export const configTable = (): string => {
  const defaults = Public.AgentLoopConfig.makeUnsafe({ model: "m" }) as unknown as Record<string, unknown>
  const rows: Array<Array<string>> = []
  const visit = (fields: Record<string, Schema.Top>, prefix: string, values: Record<string, unknown> | undefined) => {
    for (const [name, field] of Object.entries(fields)) {
      const key = prefix + name
      const description = SchemaAST.resolveDescription(field.ast)
      if (description === undefined) throw new Error(`AgentLoopConfig field ${key} has no description annotation`)
      const optional = field.ast.context?.isOptional === true
      const value = key === "model" ? undefined : values?.[name]
      const type = SchemaAST.toType(field.ast)
      // A struct (not a record) gets a row of its own and one per field.
      const nested = SchemaAST.isObjects(type) && type.propertySignatures.length > 0 ? structFields(field) : undefined
      const shown = nested !== undefined ? "{ … }" : typeText(field.ast, "encoded")
      const shownDefault = key === "model" ? "required" : value === undefined && optional ? "none" : nested ? "see below" : valueText(value)
      rows.push([code(key), code(shown), shownDefault, description])
      if (nested !== undefined) visit(nested, `${key}.`, value as Record<string, unknown> | undefined)
    }
  }
  visit(Public.AgentLoopConfig.AgentLoopConfigSchema.fields, "", defaults)
  return table(["field", "type", "default", "meaning"], rows)
}

// ---------------------------------------------------------------------------------------------
// Events

/** One row per kind of the `AgentEvent` union: its own fields (beyond those every event has) and what it means. */
export const eventsTable = (): string => {
  const members = Public.AgentEvent.AgentEvent.members
  const common = Object.keys(members[0]!.fields).filter((name) => members.every((member) => name in member.fields))
  const rows = members.map((member) => {
    const kind = member.fields._tag.schema.literal
    const description = SchemaAST.resolveDescription(member.ast)
    if (description === undefined) throw new Error(`AgentEvent ${kind} has no description annotation`)
    const own = Object.entries(member.fields as Record<string, Schema.Top>).filter(([name]) => !common.includes(name))
    const fields = own.map(([name, field]) => code(`${name}${field.ast.context?.isOptional === true ? "?" : ""}: ${typeText(field.ast)}`))
    const lifecycle = (Public.lifecycleKinds as ReadonlyArray<string>).includes(kind) ? " Lifecycle: kept when a bounded buffer is full." : ""
    return [code(kind), fields.join(", "), description + lifecycle]
  })
  const base = (members[0]!.fields as Record<string, Schema.Top>)
  const commonText = common.filter((name) => name !== "_tag").map((name) =>
    code(`${name}${base[name]!.ast.context?.isOptional === true ? "?" : ""}: ${typeText(base[name]!.ast)}`)
  )
  return `Every event has ${commonText.join(", ")}, and its kind in \`_tag\`.\n\n` + table(["kind", "fields", "meaning"], rows)
}

// ---------------------------------------------------------------------------------------------
// Hook points

/** The text of `export interface NAME { … }` in `source`, or `undefined`. */
const interfaceBody = (source: string, name: string): string | undefined => {
  const start = source.indexOf(`export interface ${name} {`)
  if (start < 0) return undefined
  let depth = 0
  for (let i = source.indexOf("{", start); i < source.length; i++) {
    if (source[i] === "{") depth++
    else if (source[i] === "}" && --depth === 0) return source.slice(source.indexOf("{", start) + 1, i)
  }
  return undefined
}

/** The top-level `readonly name` keys of an object type's text (nested braces skipped). */
const topLevelKeys = (body: string): Array<string> => {
  const keys: Array<string> = []
  let depth = 0
  for (const token of body.matchAll(/[{}]|readonly (\w+)(\?)?:/g)) {
    if (token[0] === "{") depth++
    else if (token[0] === "}") depth--
    else if (depth === 0) keys.push(token[1]! + (token[2] ?? ""))
  }
  return keys
}

/** Top-level members of a union type's text: `A | Modify<{ … }> | B` → three. */
const unionMembers = (text: string): Array<string> => {
  const members: Array<string> = []
  let depth = 0
  let current = ""
  for (const char of text) {
    if ("<{(".includes(char)) depth++
    if (">})".includes(char)) depth--
    if (char === "|" && depth === 0) {
      members.push(current.trim())
      current = ""
    } else current += char
  }
  if (current.trim() !== "") members.push(current.trim())
  return members
}

/**
 * One row per handler of the `Hook` interface (`src/domain/Hook.ts`): when it runs (its doc
 * comment), what it receives and the decisions its return type allows, as the `Hook` helpers that
 * make them. Read from the source, since the decisions exist only as types.
 */
export const hooksTable = (root: string): string => {
  const file = path.join(root, "src/domain/Hook.ts")
  const source = fs.readFileSync(file, "utf8")
  const hook = interfaceBody(source, "Hook")
  if (hook === undefined) throw new Error(`${file}: no "export interface Hook {"`)
  const decision = (text: string): string => {
    const modify = /^Modify<(.*)>$/s.exec(text)
    if (modify !== undefined && modify !== null) {
      const changes = modify[1]!.trim()
      const fields = changes.startsWith("{") ? topLevelKeys(changes.slice(1, -1)) : topLevelKeys(interfaceBody(source, changes) ?? "")
      return `Hook.modify({ ${fields.join(", ")} })`
    }
    const helpers: Record<string, string> = {
      Continue: "Hook.continue",
      Approve: "Hook.approve",
      Block: "Hook.block(reason)",
      Deny: "Hook.deny(reason)",
      AbortTurn: "Hook.abortTurn(reason)",
      HardAbort: "Hook.hardAbort(reason)",
      Patch: "Hook.patch({ content?, isError? })"
    }
    const helper = helpers[text]
    if (helper === undefined) throw new Error(`${file}: unknown hook decision ${text}`)
    return helper
  }
  const handler = /(?:\/\*\*\s*([\s\S]*?)\s*\*\/\s*)?readonly (\w+)\?: \((\w+): ([\s\S]*?)\) => HookReturn<(.*)>\n/g
  const rows = [...hook.matchAll(handler)].map(([, doc, point, parameter, input, decisions]) => {
    if (doc === undefined) throw new Error(`${file}: the handler ${point} has no doc comment`)
    const receives = input!.trim().startsWith("{") ? topLevelKeys(input!.trim().slice(1, -1)).join(", ") : `${parameter}: ${input!.trim()}`
    const may = decisions === "never" ? "observe only" : unionMembers(decisions!).map(decision).map(code).join(", ")
    return [code(point!), code(receives), may, doc.replace(/\s*\*\s*/g, " ")]
  })
  if (rows.length === 0) throw new Error(`${file}: no handlers found in the Hook interface`)
  return table(["point", "receives", "may return", "runs"], rows)
}

// ---------------------------------------------------------------------------------------------
// The CLI

interface FlagDoc {
  readonly name: string
  readonly aliases: ReadonlyArray<string>
  readonly type: string
  readonly description: { readonly _tag: "Some"; readonly value: string } | { readonly _tag: "None" }
}
interface ArgDoc {
  readonly name: string
  readonly description: FlagDoc["description"]
  readonly required: boolean
  readonly variadic: boolean
}
interface HelpDoc {
  readonly description: string
  readonly flags: ReadonlyArray<FlagDoc>
  readonly args?: ReadonlyArray<ArgDoc>
}
interface CommandNode {
  readonly name: string
  readonly subcommands: ReadonlyArray<{ readonly commands: ReadonlyArray<CommandNode> }>
  /** What `--help` prints, as data: `effect/cli` builds it on each command (not in its typings). */
  readonly buildHelpDoc?: (path: ReadonlyArray<string>) => HelpDoc
}

const described = (description: FlagDoc["description"]): string => (description._tag === "Some" ? description.value : "")

/** Every command that runs something, with its path (`agent-loop sessions show`) and help. */
const leafCommands = (): Array<{ readonly path: ReadonlyArray<string>; readonly help: HelpDoc }> => {
  const found: Array<{ readonly path: ReadonlyArray<string>; readonly help: HelpDoc }> = []
  const visit = (command: CommandNode, path: ReadonlyArray<string>) => {
    const children = command.subcommands.flatMap((group) => group.commands)
    if (children.length > 0) return children.forEach((child) => visit(child, [...path, child.name]))
    if (command.buildHelpDoc === undefined) throw new Error("effect/cli commands no longer carry buildHelpDoc: update scripts/docsTables.ts")
    found.push({ path, help: command.buildHelpDoc(path) })
  }
  visit(agentLoop as unknown as CommandNode, ["agent-loop"])
  return found
}

/** The commands with their arguments, then every flag once, with the commands that take it. */
export const cliTables = (): string => {
  const commands = leafCommands()
  const commandRows = commands.map(({ help, path }) => {
    const args = (help.args ?? []).map((arg) => {
      const name = `${arg.name.toUpperCase()}${arg.variadic ? "..." : ""}`
      return `${code(arg.required ? name : `[${name}]`)}: ${described(arg.description)}`
    })
    return [code(path.join(" ")), args.join("; "), help.description]
  })
  const flags = new Map<string, { readonly flag: FlagDoc; readonly commands: Array<string> }>()
  for (const { help, path } of commands) {
    for (const flag of help.flags) {
      const key = `${flag.name}\u0000${described(flag.description)}`
      const entry = flags.get(key) ?? { flag, commands: [] }
      entry.commands.push(path.slice(1).join(" "))
      flags.set(key, entry)
    }
  }
  const flagRows = [...flags.values()].map(({ commands: using, flag }) => [
    [`--${flag.name}`, ...flag.aliases.filter((alias) => alias !== `--${flag.name}`)].map(code).join(", "),
    flag.type,
    using.length === commands.length ? "all" : using.join(", "),
    described(flag.description)
  ])
  return "### Commands\n\n" + table(["command", "arguments", "what it does"], commandRows) + "\n\n### Flags\n\n" +
    table(["flag", "value", "commands", "meaning"], flagRows)
}

// ---------------------------------------------------------------------------------------------
// Models

const dollars = (value: number | undefined): string => (value === undefined ? "—" : `$${value}`)

/** The built-in registry: a table per provider, one row per model. */
export const modelsTable = (): string => {
  const sections = Public.Models.providers().map((provider) => {
    const rows = Public.Models.forProvider(provider).map((model) => [
      [model.id, ...(model.aliases ?? [])].map(code).join(", "),
      model.vendor,
      model.contextWindow.toLocaleString("en-US"),
      model.maxOutputTokens.toLocaleString("en-US"),
      `${dollars(model.price.inputPerMillion)} / ${dollars(model.price.outputPerMillion)}`,
      `${dollars(model.price.cachedInputPerMillion)} / ${dollars(model.price.cacheWritePerMillion)}`,
      model.images ? "yes" : "no",
      model.reasoning === true ? "yes" : "no"
    ])
    return `### ${provider}\n\n` +
      table(["model", "vendor", "context window", "max output", "input / output", "cache read / write", "images", "reasoning"], rows)
  })
  return `Prices in US dollars per million tokens, as of ${Public.Models.PRICES_AS_OF}.\n\n` + sections.join("\n\n")
}

// ---------------------------------------------------------------------------------------------
// The code map's file list

/** The first sentence of a file's header comment. */
const headline = (source: string): string | undefined => {
  const header = /^\/\*\*([\s\S]*?)\*\//.exec(source.trimStart()) ?? /^((?:\/\/.*\n)+)/.exec(source)
  if (header === null) return undefined
  const text = header[1]!.replace(/^\s*(\*|\/\/) ?/gm, "").split(/\n\s*\n|@example/)[0]!.replace(/\s+/g, " ").trim()
  const end = /(?<!\be\.g|\bi\.e|\betc)\.(?=\s|$)/.exec(text)
  return end === null ? text : text.slice(0, end.index + 1)
}

/** Every file of `src/`, by folder, with the first sentence of its header comment. */
export const filesTable = (root: string): string => {
  const src = path.join(root, "src")
  const files = fs.readdirSync(src, { recursive: true, encoding: "utf8" }).filter((file) => file.endsWith(".ts")).sort()
  const folders = new Map<string, Array<string>>()
  for (const file of files) {
    const folder = path.dirname(file) === "." ? "src" : `src/${path.dirname(file).split(path.sep)[0]}`
    folders.set(folder, [...(folders.get(folder) ?? []), file])
  }
  const order = (folder: string) => (folder === "src" ? "" : folder)
  return [...folders].sort(([a], [b]) => order(a).localeCompare(order(b))).map(([folder, inFolder]) => {
    const rows = inFolder.map((file) => {
      const summary = headline(fs.readFileSync(path.join(src, file), "utf8"))
      if (summary === undefined) throw new Error(`src/${file} has no header comment`)
      return [`[${file.split(path.sep).join("/")}](../src/${file.split(path.sep).join("/")})`, summary]
    })
    return `### ${folder}/\n\n` + table(["file", "what it is"], rows)
  }).join("\n\n")
}

// ---------------------------------------------------------------------------------------------
// Settings files

/** One row per field of a settings file (`src/cli/config/settingsFile.ts`), all optional. */
export const settingsTable = (): string => {
  const rows = Object.entries(Settings.fields as Record<string, Schema.Top>).map(([name, field]) => {
    const description = SchemaAST.resolveDescription(field.ast)
    if (description === undefined) throw new Error(`Settings field ${name} has no description annotation`)
    const inner = (field as unknown as { readonly schema?: Schema.Top }).schema ?? field
    return [code(name), code(typeText(inner.ast, "encoded")), description]
  })
  return table(["field", "type", "meaning"], rows)
}
