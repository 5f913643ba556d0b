/**
 * `@path` imports in memory files (`CLAUDE.md`, `AGENTS.md`), as Claude Code reads them: a word
 * starting with `@` names a file to bring in, relative to the importing file's directory, or to
 * the home directory with `@~/`. Words inside code spans and fenced code blocks are text, and so is
 * an address such as `someone@example.com` (the `@` must start the word).
 */
import * as nodePath from "node:path"

/** How deep imports are followed: a memory file's imports, theirs, … five hops at most. */
export const MAX_IMPORT_DEPTH = 5

/** The paths `text` imports, in order, each once, as written (without the `@`). */
export const importsOf = (text: string): ReadonlyArray<string> => {
  const found: Array<string> = []
  let fenced = false
  for (const line of text.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced
      continue
    }
    if (fenced) continue
    // code spans are text
    const prose = line.replace(/`[^`]*`/g, " ")
    for (const match of prose.matchAll(/(?:^|\s)@((?:~\/)?[^\s`'"<>()[\]{},;]+)/g)) {
      // a sentence's last period is not part of the path
      const path = match[1]!.replace(/[.:!?]+$/, "")
      if (path !== "" && path !== "~/" && !found.includes(path)) found.push(path)
    }
  }
  return found
}

/** Where an import of `from` (the importing file, absolute) points: `~/` is `home`. */
export const resolveImport = (path: string, from: string, home: string): string =>
  path.startsWith("~/") ? nodePath.join(home, path.slice(2)) : nodePath.resolve(nodePath.dirname(from), path)
