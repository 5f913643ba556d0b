/** Path containment, the one check every confinement asks. */
import * as nodePath from "node:path"

/**
 * Whether `candidate` is `root` or inside it, by their absolute paths as given (no link is
 * resolved: callers pass paths they resolved, or compare the names as written).
 */
export const isWithin = (root: string, candidate: string): boolean => {
  const rel = nodePath.relative(root, candidate)
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${nodePath.sep}`) && !nodePath.isAbsolute(rel))
}
