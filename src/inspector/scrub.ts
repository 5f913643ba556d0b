/**
 * Known secrets taken out of everything the inspector shows or exports: every string inside a
 * value, at any depth, goes through the `Secrets` scrubber (a key a tool printed, a token in an
 * event), so neither the page nor a shared file can carry one.
 */

/** `value` with `scrub` applied to every string in it (object keys included); other values are kept. */
export const deepScrub = (value: unknown, scrub: (text: string) => string): unknown => {
  if (typeof value === "string") return scrub(value)
  if (Array.isArray(value)) return value.map((item) => deepScrub(item, scrub))
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(value)) out[scrub(key)] = deepScrub(item, scrub)
    return out
  }
  return value
}
