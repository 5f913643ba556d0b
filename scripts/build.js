// `npm run build`: compiles src/ into dist/ (ESM JavaScript, declarations, source maps) for the
// published package. Runs on any supported Node, before anything is built, so it is JavaScript.
//
// The sources import each other with `.ts` extensions (Node runs them directly). tsc rewrites those
// to `.js` in the JavaScript it emits (`rewriteRelativeImportExtensions`) but not in declarations,
// where a `.ts` specifier confuses older compilers and editors of the package's users; the last step
// rewrites them too.
import { execFileSync } from "node:child_process"
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const dist = path.join(root, "dist")
const tsc = path.join(path.dirname(createRequire(import.meta.url).resolve("typescript/package.json")), "bin", "tsc")

// A source file deleted since the last build must not linger in the package.
rmSync(dist, { recursive: true, force: true })
execFileSync(process.execPath, [tsc, "-p", path.join(root, "tsconfig.build.json")], { stdio: "inherit" })

/** A relative specifier ending in `.ts`, in `from "…"`, `import("…")` or `import "…"`. */
const relativeTs = /((?:from|import)\s*\(?\s*)(["'])(\.\.?\/[^"']*)\.ts\2/g

const declarations = readdirSync(dist, { recursive: true, encoding: "utf8" }).filter((file) => file.endsWith(".d.ts"))
for (const file of declarations) {
  const full = path.join(dist, file)
  const text = readFileSync(full, "utf8")
  const rewritten = text.replace(relativeTs, "$1$2$3.js$2")
  if (rewritten !== text) writeFileSync(full, rewritten)
}

// The help pages and version line as `effect/cli` prints them, for the installed command to answer
// `--help` without loading the CLI (`src/cli/quick.ts`).
const { Effect } = await import("effect")
const { helpPages } = await import(pathToFileURL(path.join(dist, "cli", "helpPages.js")).href)
const { agentLoop } = await import(pathToFileURL(path.join(dist, "cli", "commands.js")).href)
const { version } = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"))
writeFileSync(path.join(dist, "cli", "help.json"), JSON.stringify(await Effect.runPromise(helpPages(agentLoop, version))))
