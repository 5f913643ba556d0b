/**
 * `npm run docs`: writes the reference tables of the docs from the code they describe (the
 * configuration Schema, the event union, the hook interface, the CLI's definitions, the model
 * registry, the header comments of `src/`), into the marked regions of the pages:
 *
 *   <!-- generated:NAME -->
 *   …
 *   <!-- /generated:NAME -->
 *
 * Whole files too: the server's OpenAPI document (`docs/openapi.json`), from its `HttpApi`
 * declaration.
 *
 * `npm run docs -- --check` writes nothing and fails, naming each stale page, when a region
 * differs from what the code says now (`test/package/docs.test.ts` runs it, so the suite does too).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as OpenApi from "effect/http-api/OpenApi"
import { AgentLoopApi } from "../src/server/Api.ts"
import { cliTables, configTable, eventsTable, filesTable, hooksTable, modelsTable, settingsTable } from "./docsTables.ts"

const root = fileURLToPath(new URL("..", import.meta.url))

/** Each page and the regions it holds, by name. */
const pages: Record<string, Record<string, () => string>> = {
  "docs/configuration.md": { config: configTable, settings: settingsTable },
  "docs/events.md": { events: eventsTable },
  "docs/hooks.md": { hooks: () => hooksTable(root) },
  "docs/cli.md": { cli: cliTables },
  "docs/providers.md": { models: modelsTable },
  "docs/code-map.md": { files: () => filesTable(root) }
}

/** Files generated whole. */
const files: Record<string, () => string> = {
  "docs/openapi.json": () => `${JSON.stringify(OpenApi.fromApi(AgentLoopApi), null, 2)}\n`
}

/** `text` with region `name` holding `content`; fails when the page has no such region. */
const fill = (page: string, text: string, name: string, content: string): string => {
  const start = `<!-- generated:${name} -->`
  const end = `<!-- /generated:${name} -->`
  const from = text.indexOf(start)
  const to = text.indexOf(end)
  if (from < 0 || to < from) throw new Error(`${page} has no region ${start} … ${end}`)
  return text.slice(0, from + start.length) + "\n" + content.trim() + "\n" + text.slice(to)
}

const check = process.argv.includes("--check")
const stale: Array<string> = []
for (const [page, regions] of Object.entries(pages)) {
  const file = path.join(root, page)
  const text = fs.readFileSync(file, "utf8")
  let fresh = text
  for (const [name, render] of Object.entries(regions)) fresh = fill(page, fresh, name, render())
  if (fresh === text) continue
  if (check) stale.push(page)
  else {
    fs.writeFileSync(file, fresh)
    console.log(`updated ${page}`)
  }
}
for (const [page, render] of Object.entries(files)) {
  const file = path.join(root, page)
  const text = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""
  const fresh = render()
  if (fresh === text) continue
  if (check) stale.push(page)
  else {
    fs.writeFileSync(file, fresh)
    console.log(`updated ${page}`)
  }
}
if (stale.length > 0) {
  console.error(`Stale generated docs: ${stale.join(", ")}. Run \`npm run docs\` and commit the result.`)
  process.exitCode = 1
}
