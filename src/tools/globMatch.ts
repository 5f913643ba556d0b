/**
 * Matching the walk's files against a glob (`grep`'s `glob`, `glob`'s `pattern`) as `effect/Glob`
 * does, with `.` names matched like any other, but without its general matcher for the common
 * shapes — a plain name, `*.ext`, `prefix*`, and `**∕` before one of those — which are string
 * comparisons: a walk tests every file it meets.
 */
import * as Glob from "effect/Glob"

const SYNTAX = /[*?[\]{}\\]/

/** A test of one name against a pattern without `/`. */
const nameTest = (segment: string): (name: string) => boolean => {
  if (!SYNTAX.test(segment)) return (name) => name === segment
  if (segment.startsWith("*") && !SYNTAX.test(segment.slice(1))) {
    const ending = segment.slice(1)
    return (name) => name.endsWith(ending)
  }
  if (segment.endsWith("*") && !SYNTAX.test(segment.slice(0, -1))) {
    const beginning = segment.slice(0, -1)
    return (name) => name.startsWith(beginning)
  }
  const glob = Glob.make(segment, { dot: true })
  return (name) => Glob.match(glob, name)
}

/**
 * A test of a file, by its path (`/`-separated, relative to where the pattern applies) and its
 * name: a pattern with a `/` is matched against the path, one without against the name (at any
 * depth), unless `anchored`: then against the path too, so only a file right there matches.
 */
export const fileMatcher = (pattern: string, anchored = false): (path: string, name: string) => boolean => {
  if (!pattern.includes("/")) {
    const test = nameTest(pattern)
    return anchored ? (path, name) => !path.includes("/") && test(name) : (_path, name) => test(name)
  }
  const last = pattern.slice(3)
  if (pattern.startsWith("**/") && last !== "" && !last.includes("/") && last !== "**") {
    const test = nameTest(last)
    return (_path, name) => test(name)
  }
  const glob = Glob.make(pattern, { dot: true })
  return (path) => Glob.match(glob, path)
}
