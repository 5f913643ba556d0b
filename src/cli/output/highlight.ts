/**
 * Syntax colours for one line of a fenced code block: comments, strings, numbers and keywords of
 * the languages models write most. Line by line (the block streams), so a comment or string that
 * spans lines is coloured on its first line only; the text itself is never changed.
 */
import type { MarkdownStyle } from "./markdownInline.ts"

interface Grammar {
  readonly keywords: ReadonlySet<string>
  /** Where a line comment starts. */
  readonly comment: ReadonlyArray<string>
  /** Quote characters of strings. */
  readonly quotes: string
}

const words = (text: string): ReadonlySet<string> => new Set(text.split(" "))

const C_LIKE = { comment: ["//"], quotes: `"'` }
const JS = {
  ...C_LIKE,
  quotes: `"'\``,
  keywords: words(
    "await async break case catch class const continue default delete do else enum export extends false finally for from function if implements import in instanceof interface let new null of private protected public readonly return static super switch this throw true try type typeof undefined var void while yield as satisfies"
  )
}
const SHELL = {
  comment: ["#"],
  quotes: `"'`,
  keywords: words("if then else elif fi for while until do done case esac function in return export local readonly set unset echo cd exit")
}

const GRAMMARS: Record<string, Grammar> = {
  js: JS, javascript: JS, jsx: JS, ts: JS, typescript: JS, tsx: JS, mjs: JS, cjs: JS,
  sh: SHELL, bash: SHELL, shell: SHELL, zsh: SHELL, console: SHELL,
  py: {
    comment: ["#"],
    quotes: `"'`,
    keywords: words(
      "and as assert async await break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return True try while with yield self"
    )
  },
  go: {
    ...C_LIKE,
    quotes: `"'\``,
    keywords: words(
      "break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var nil true false"
    )
  },
  rust: {
    ...C_LIKE,
    keywords: words(
      "as async await break const continue crate else enum extern false fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait true type unsafe use where while"
    )
  },
  json: { comment: [], quotes: `"`, keywords: words("true false null") },
  yaml: { comment: ["#"], quotes: `"'`, keywords: words("true false null yes no") },
  sql: {
    comment: ["--"],
    quotes: `'"`,
    keywords: words(
      "select from where and or not insert into values update set delete create table drop alter index join left right inner outer on group by order having limit as null is in distinct primary key"
    )
  }
}
GRAMMARS["python"] = GRAMMARS["py"]!
GRAMMARS["rs"] = GRAMMARS["rust"]!
GRAMMARS["yml"] = GRAMMARS["yaml"]!
for (const name of ["c", "cpp", "java", "kotlin", "swift", "cs", "csharp"]) GRAMMARS[name] = { ...C_LIKE, keywords: JS.keywords }

const WORD = /^[A-Za-z_$][\w$]*/
const NUMBER = /^(0x[\da-fA-F_]+|\d[\d_]*(\.\d+)?([eE][+-]?\d+)?)\b/

/** `line` coloured for `language`; as it is for a language it does not know. */
export const highlight = (line: string, language: string, style: MarkdownStyle): string => {
  const grammar = GRAMMARS[language]
  if (grammar === undefined || !style.enabled) return line
  const keywords = language === "sql" ? new Set([...grammar.keywords].flatMap((k) => [k, k.toUpperCase()])) : grammar.keywords
  let out = ""
  let i = 0
  while (i < line.length) {
    const rest = line.slice(i)
    if (grammar.comment.some((start) => rest.startsWith(start) && (start !== "#" || i === 0 || /\s/.test(line[i - 1]!)))) {
      return out + style.dim(rest)
    }
    const char = line[i]!
    if (grammar.quotes.includes(char)) {
      let end = i + 1
      while (end < line.length && line[end] !== char) end += line[end] === "\\" ? 2 : 1
      out += style.green(line.slice(i, Math.min(end + 1, line.length)))
      i = end + 1
      continue
    }
    const word = WORD.exec(rest)
    if (word !== null) {
      out += keywords.has(word[0]) ? style.magenta(word[0]) : word[0]
      i += word[0].length
      continue
    }
    const number = i > 0 && /\w/.test(line[i - 1]!) ? null : NUMBER.exec(rest)
    if (number !== null) {
      out += style.yellow(number[0])
      i += number[0].length
      continue
    }
    out += char
    i++
  }
  return out
}
