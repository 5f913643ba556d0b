/**
 * `SessionStoreJsonl` file names: a session key as the name of its JSONL file, and back.
 *
 * Session keys come from users and channels, so any string must map to exactly one file
 * directly inside the store directory, on every file system. The scheme:
 *
 * - Each UTF-16 code unit of the key is kept when it is `[a-z0-9-]`; any other ASCII unit
 *   becomes `_hh` and any other unit `_uhhhh` (lowercase hex). Working on code units rather
 *   than UTF-8 keeps even lone surrogates distinct, so the mapping is injective.
 * - Short keys: `s-<escaped>.jsonl`, decoded straight from the name. The output holds only
 *   lowercase ASCII letters, digits, `-` and `_`, so `Foo` and `foo` stay distinct on
 *   case-insensitive file systems, no name is `.`/`..` or contains a separator, and the `s-`
 *   prefix keeps Windows device names (`CON`, `NUL`) out.
 * - Names that would pass 200 bytes: `h-<first 120 escaped chars>-<sha256 of escaped>.jsonl`.
 *   Such a name cannot be decoded, so the key is read back from the file's header line
 *   (every session file starts with `{"sessionKey": ...}`), which also catches a collision.
 * - Any other name (a leftover `.tmp-…` of an older version's rewrites, say) is not a session.
 */
import { createHash } from "node:crypto"

const EXTENSION = ".jsonl"
const MAX_NAME_LENGTH = 200
const READABLE_PREFIX = 120

const isKept = (unit: number): boolean =>
  (unit >= 0x61 && unit <= 0x7a) || (unit >= 0x30 && unit <= 0x39) || unit === 0x2d

const escape = (key: string): string => {
  let out = ""
  for (let i = 0; i < key.length; i++) {
    const unit = key.charCodeAt(i)
    out += isKept(unit)
      ? key[i]
      : unit < 0x80
      ? "_" + unit.toString(16).padStart(2, "0")
      : "_u" + unit.toString(16).padStart(4, "0")
  }
  return out
}

const unescape = (escaped: string): string | undefined => {
  const decoded = escaped.replace(/_u([0-9a-f]{4})|_([0-9a-f]{2})/g, (_, wide: string | undefined, narrow: string | undefined) =>
    String.fromCharCode(parseInt(wide ?? narrow ?? "", 16)))
  return escape(decoded) === escaped ? decoded : undefined
}

/** The file name of a session key: safe, at most 200 bytes, distinct for distinct keys. */
export const fileName = (key: string): string => {
  const escaped = escape(key)
  const plain = `s-${escaped}${EXTENSION}`
  if (plain.length <= MAX_NAME_LENGTH) return plain
  const digest = createHash("sha256").update(escaped).digest("hex")
  return `h-${escaped.slice(0, READABLE_PREFIX)}-${digest}${EXTENSION}`
}

/**
 * What a directory entry is: a session whose key the name gives, a hashed session whose key
 * is in its header, or something else (temporary or unrelated files) to leave alone.
 */
export type Entry =
  | { readonly _tag: "Plain"; readonly key: string }
  | { readonly _tag: "Hashed" }
  | { readonly _tag: "Other" }

const PLAIN_NAME = /^s-([a-z0-9_-]*)\.jsonl$/
const HASHED_NAME = /^h-[a-z0-9_-]*-[0-9a-f]{64}\.jsonl$/

/** Classifies a directory entry; only canonical names count, so no two names claim one key. */
export const classify = (name: string): Entry => {
  const plain = PLAIN_NAME.exec(name)
  if (plain !== null) {
    const key = unescape(plain[1] ?? "")
    return key !== undefined && fileName(key) === name ? { _tag: "Plain", key } : { _tag: "Other" }
  }
  return HASHED_NAME.test(name) ? { _tag: "Hashed" } : { _tag: "Other" }
}

