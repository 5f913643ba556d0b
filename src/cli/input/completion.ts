/**
 * What Tab completes in the chat (`keys.ts` asks): at the start of the line, `/` and a name — the
 * built-in and custom commands; after `@`, a workspace path, matched fuzzily (the letters in
 * order, closest first), and the agent files' agents by name. Paths come from a bounded walk of
 * the workspace that skips hidden directories and `node_modules`, kept for a few seconds.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import type { Completion } from "./keys.ts"

/** What completion offers. */
export interface Sources {
  /** Command names without the slash (built-in and custom). */
  readonly commands: () => ReadonlyArray<string>
  /** The agents' names. */
  readonly agents: () => ReadonlyArray<string>
  /** Where `@` paths are found. */
  readonly workspace: string
}

/** How many paths the walk collects at most, and how long they are kept. */
const MAX_PATHS = 5_000
const PATHS_TTL_MS = 5_000
/** How many `@` candidates are offered. */
const MAX_CANDIDATES = 50

/** The workspace's paths, relative, directories ending in `/`: breadth first, so the shallow ones are there first. */
export const walk = (root: string, max = MAX_PATHS): ReadonlyArray<string> => {
  const found: Array<string> = []
  const queue: Array<string> = [""]
  while (queue.length > 0 && found.length < max) {
    const dir = queue.shift()!
    let entries: Array<fs.Dirent>
    try {
      entries = fs.readdirSync(path.join(root, dir), { withFileTypes: true })
    } catch {
      continue
    }
    entries.sort((a, b) => a.name.localeCompare(b.name))
    for (const entry of entries) {
      if (entry.name.startsWith(".") || entry.name === "node_modules") continue
      const relative = dir === "" ? entry.name : `${dir}/${entry.name}`
      if (entry.isDirectory()) {
        found.push(`${relative}/`)
        queue.push(relative)
      } else found.push(relative)
      if (found.length >= max) break
    }
  }
  return found
}

/**
 * How well `query` matches `candidate` fuzzily (its letters in order, case ignored); `undefined`
 * when it does not. Lower is better: a substring beats scattered letters, a match in the file's
 * own name beats one in its directories, and shorter paths come first.
 */
export const fuzzyScore = (query: string, candidate: string): number | undefined => {
  const q = query.toLowerCase()
  const c = candidate.toLowerCase()
  if (q === "") return c.length
  const base = c.replace(/\/$/, "").split("/").pop() ?? c
  if (base.startsWith(q)) return c.length
  if (c.startsWith(q)) return 1_000 + c.length
  if (c.includes(q)) return 2_000 + c.length
  let at = 0
  let gaps = 0
  for (const char of q) {
    const next = c.indexOf(char, at)
    if (next < 0) return undefined
    gaps += next - at
    at = next + 1
  }
  return 10_000 + gaps * 10 + c.length
}

/** The best `@` candidates for `query` among `paths` and `agents`, best first. */
export const atCandidates = (query: string, paths: ReadonlyArray<string>, agents: ReadonlyArray<string>): ReadonlyArray<string> => {
  // a query with a directory part completes inside that directory first, as a shell would
  const scored: Array<{ readonly text: string; readonly score: number }> = []
  for (const name of agents) {
    const score = fuzzyScore(query, name)
    if (score !== undefined) scored.push({ text: name, score })
  }
  for (const candidate of paths) {
    const score = fuzzyScore(query, candidate)
    if (score !== undefined) scored.push({ text: candidate, score })
  }
  return scored.sort((a, b) => a.score - b.score || a.text.localeCompare(b.text)).slice(0, MAX_CANDIDATES).map((each) => each.text)
}

/** A completer for the chat's line. */
export const make = (sources: Sources): (before: string) => Completion | undefined => {
  let cached: { readonly at: number; readonly paths: ReadonlyArray<string> } | undefined
  const paths = () => {
    const now = Date.now()
    if (cached === undefined || now - cached.at > PATHS_TTL_MS) cached = { at: now, paths: walk(sources.workspace) }
    return cached.paths
  }
  return (before) => {
    const command = /^\/([\w:.-]*)$/.exec(before)
    if (command !== null) {
      const typed = command[1]!
      const names = [...new Set(sources.commands())].filter((name) => name.startsWith(typed)).sort()
      return { from: 0, candidates: names.map((name) => `/${name}`) }
    }
    const mention = /(^|\s)@([^\s@]*)$/.exec(before)
    if (mention === null) return undefined
    const query = mention[2]!
    const from = before.length - query.length - 1
    return { from, candidates: atCandidates(query, paths(), sources.agents()).map((each) => `@${each}`) }
  }
}
