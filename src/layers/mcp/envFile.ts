/**
 * VS Code's `envFile` of a stdio MCP server: a dotenv file whose variables the server is started
 * with, beneath those of its `env` (which win). Lines are `NAME=value`, with `export ` allowed
 * before the name, `#` comments and blank lines skipped, and a value in single or double quotes
 * taken as written inside them (double quotes read `\n` as a newline); an unquoted value ends at
 * ` #`. The values are secrets as `env`'s are.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"

/** The largest `envFile` read. */
export const MAX_ENV_FILE_BYTES = 1024 * 1024

const LINE = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/

/** The variables of a dotenv text; lines that are not assignments are passed by. */
export const parseEnvFile = (text: string): Record<string, string> => {
  const vars: Record<string, string> = {}
  for (const line of text.replace(/^\uFEFF/, "").split(/\r?\n/)) {
    if (/^\s*(#|$)/.test(line)) continue
    const match = LINE.exec(line)
    if (match === null) continue
    const raw = match[2]!
    const quote = raw[0]
    let value: string
    if ((quote === "\"" || quote === "'") && raw.length >= 2 && raw.endsWith(quote)) {
      value = raw.slice(1, -1)
      if (quote === "\"") value = value.replace(/\\n/g, "\n").replace(/\\"/g, "\"")
    } else {
      const comment = raw.search(/\s#/)
      value = (comment === -1 ? raw : raw.slice(0, comment)).trim()
    }
    vars[match[1]!] = value
  }
  return vars
}

/** Reads `file` (relative to `base`) as a dotenv file; a message saying why when it cannot be read. */
export const readEnvFile = (file: string, base: string): Record<string, string> | string => {
  const path = nodePath.resolve(base, file)
  try {
    const info = fs.statSync(path)
    if (!info.isFile()) return `envFile ${path} is not a file`
    if (info.size > MAX_ENV_FILE_BYTES) return `envFile ${path} is larger than ${MAX_ENV_FILE_BYTES} bytes`
    return parseEnvFile(fs.readFileSync(path, "utf8"))
  } catch (error) {
    return `envFile ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? "error"})`
  }
}
