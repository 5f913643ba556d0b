/**
 * Credentials written into URLs: a password (`postgres://user:PASSWORD@host`, and with no user
 * `redis://:PASSWORD@host`), and in an `http(s)` URL the user part too, which is how tokens are
 * given to Git hosts and package registries (`https://TOKEN@github.com`,
 * `https://TOKEN:x-oauth-basic@github.com`). A user name in another scheme (`postgres://app:…`,
 * `ssh://git@host`) is a name, not a secret.
 *
 * No imports: the installed launcher loads this (through `tools/secretEnv.ts`) before anything else.
 * Linear on any text: every match starts at a `://`, and the parts it scans stop at `/`.
 */

/**
 * A URL holding a credential: a non-empty password in any scheme, or any user part in an
 * `http(s)` URL. Unanchored: it finds one inside a longer value (`git clone https://TOKEN@host`).
 */
export const URL_CREDENTIAL = /:\/\/[^/\s:@]*:[^/\s@]+@|(?:https?|HTTPS?):\/\/[^/\s:@]+(?::[^/\s@]*)?@/

/** Each `://user:password@` (password optional) in a text. */
const USER_INFO = /:\/\/([^/\s:@]*)(?::([^/\s@]*))?@/g

/** The longest scheme looked back for: enough for `git+https`, bounded so the work stays linear. */
const MAX_SCHEME = 32

/** The scheme just before `at` (where `://` starts), lower-cased; empty when there is none. */
const schemeBefore = (text: string, at: number): string => {
  let start = at
  while (start > 0 && at - start < MAX_SCHEME && /[A-Za-z0-9+.-]/.test(text[start - 1]!)) start--
  return text.slice(start, at).toLowerCase()
}

/** Whether a scheme is HTTP's (`http`, `https`, `git+https`, …), whose user part is a token. */
const isHttp = (scheme: string): boolean => /(?:^|\+)https?$/.test(scheme)

/** `text` percent-decoded, or unchanged when it is not valid percent-encoding. */
const decoded = (text: string): string => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/**
 * The credentials in the URLs of `text`, as written and percent-decoded: each password, and the
 * user part of an `http(s)` URL; empty when it holds none (`URL_CREDENTIAL` is the quick test of it).
 */
export const urlCredentials = (text: string): ReadonlyArray<string> => {
  if (!text.includes("://")) return []
  const found = new Set<string>()
  const add = (part: string | undefined) => {
    if (part === undefined || part === "") return
    found.add(part)
    found.add(decoded(part))
  }
  for (const match of text.matchAll(USER_INFO)) {
    const [, user, password] = match
    add(password)
    if (isHttp(schemeBefore(text, match.index))) add(user)
  }
  return [...found]
}
