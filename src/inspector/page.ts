/**
 * The inspector's one HTML page: a shell, its style sheet and its script (`pageScript.ts`), both
 * inline and allowed by hash in a strict Content-Security-Policy, so that no other script can run
 * in the page, whatever text a session holds. The same page serves the live inspector (it fetches
 * its data) and the exported file (its data embedded as JSON in a non-executable script block).
 */
import { createHash } from "node:crypto"
import { THEME_STYLE } from "./pageFind.ts"
import { SCRIPT } from "./pageScript.ts"
import { VIEW_STYLE } from "./pageStyle.ts"

const STYLE = `
:root{--fg:#1d2330;--dim:#667085;--line:#e4e7ec;--bg:#fff;--soft:#f6f7f9;--model:#5b8def;--tool:#2fa36b;--turn:#9aa4b2;--wait:#f1b53d;--err:#d64545}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,sans-serif;color:var(--fg);background:var(--bg)}
header{display:flex;gap:16px;align-items:center;padding:8px 16px;border-bottom:1px solid var(--line);background:var(--soft)}
header b{font-size:15px}header a{color:var(--fg)}main{padding:12px 16px}a{color:#2557c7;text-decoration:none}a:hover{text-decoration:underline}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:4px 8px;border-bottom:1px solid var(--line);vertical-align:top}th{color:var(--dim);font-weight:500}
td.num{text-align:right;font-variant-numeric:tabular-nums}.dim{color:var(--dim)}.badge{padding:0 6px;border-radius:8px;font-size:12px}.badge.ok{background:#e6f4ea}.badge.bad{background:#fde8e8}.failure{color:#b3261e}.pager{margin:8px 0;display:flex;gap:8px;align-items:center}
input[type=search]{padding:4px 8px;width:320px;border:1px solid var(--line);border-radius:4px}button{padding:2px 10px}
.msg{border:1px solid var(--line);border-radius:6px;padding:8px 10px;margin:8px 0;max-width:980px}.msg .who{font-size:12px;color:var(--dim);margin-bottom:4px}
.msg.user{background:#f3f7ff}.msg.tool{background:#f5fbf7}.msg.tool.error{background:#fdf3f3}.msg.compaction{background:#fff8e6;border-style:dashed}
.text{white-space:pre-wrap;word-break:break-word}pre{white-space:pre-wrap;word-break:break-word;background:var(--soft);padding:6px;border-radius:4px;margin:4px 0;font-size:12px}
img.part{max-width:480px;max-height:360px;display:block;margin:6px 0;border:1px solid var(--line)}details>summary{cursor:pointer;color:var(--dim)}
.turns{display:flex;flex-wrap:wrap;gap:6px;margin:8px 0}.turns a{border:1px solid var(--line);border-radius:12px;padding:1px 8px;font-size:12px}
.layout{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:16px}.gantt{border:1px solid var(--line);border-radius:6px;padding:6px}
.row{display:grid;grid-template-columns:260px 1fr;align-items:center;min-height:22px}.row .name{overflow:hidden;white-space:nowrap;text-overflow:ellipsis;font-size:12px}
.track{position:relative;height:16px;background:var(--soft)}.bar{position:absolute;top:2px;height:12px;border-radius:2px;min-width:2px}
.bar.turn{background:var(--turn)}.bar.model{background:var(--model)}.bar.tool{background:var(--tool)}.bar.wait{background:var(--wait);opacity:.7}.bar.error{background:var(--err)}
.mark{position:absolute;top:0;width:2px;height:16px;background:#000}.mark.retry{background:#e67e22}.mark.interrupt{background:var(--err)}.mark.compaction{background:#8e44ad}
.events{max-height:70vh;overflow:auto;font-size:12px;border:1px solid var(--line);border-radius:6px}.events td{padding:2px 6px}
.chart{margin-top:10px}.legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px}.live{font-size:12px;color:var(--dim)}
#live-text{white-space:pre-wrap;font-size:12px;max-height:120px;overflow:auto;border-left:3px solid var(--model);padding-left:6px;margin:6px 0}
#session-summary{display:flex;flex-wrap:wrap;gap:2px 18px;margin:0;padding:6px 16px;border-bottom:1px solid var(--line);font-size:13px}#session-summary div{display:flex;gap:6px}#session-summary dt{color:var(--dim)}#session-summary dd{margin:0}
${VIEW_STYLE}${THEME_STYLE}`

/** The base64 SHA-256 of `text`, as a CSP source expression takes it. */
const hash = (text: string): string => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`

const scriptHash = hash(SCRIPT)
const styleHash = hash(STYLE)

/**
 * The policy of the live page: its own script and style only (by hash), data from its own origin,
 * images from its own origin or inline data; nothing remote, no plugins, no framing, no forms.
 */
export const livePolicy = [
  "default-src 'self'",
  `script-src ${scriptHash}`,
  `style-src ${styleHash}`,
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join("; ")

/** The policy of an exported file: nothing but its own script and style, and inline images; no network at all. */
export const exportPolicy = [
  "default-src 'none'",
  `script-src ${scriptHash}`,
  `style-src ${styleHash}`,
  "img-src data:",
  "base-uri 'none'",
  "form-action 'none'"
].join("; ")

/**
 * `value` as JSON that is safe inside a `<script type="application/json">` block: `<` (so neither
 * `</script>` nor `<!--` can end or change the block), `>`, `&` and the two JavaScript line
 * separators are written as `\u` escapes, which JSON.parse reads back unchanged.
 */
export const embedJson = (value: unknown): string =>
  JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)

/** The page: the live inspector's (no `data`), or an exported file's (its `data` embedded). */
export const html = (options: {
  readonly title: string
  readonly data?: unknown
  /** A header line of name and value pairs (an exported session's model, time, tokens and cost). */
  readonly summary?: ReadonlyArray<readonly [string, string]>
}): string => {
  // frame-ancestors works only as a header (which the live page also gets); in a meta tag it is ignored with a warning
  const policy = options.data === undefined ? livePolicy.replace("; frame-ancestors 'none'", "") : exportPolicy
  const data = options.data === undefined ? "" : `<script type="application/json" id="inspector-data">${embedJson(options.data)}</script>\n`
  const escape = (text: string) => text.replace(/[<>&"]/g, (c) => `&#${c.charCodeAt(0)};`)
  const title = escape(options.title)
  const summary = options.summary === undefined || options.summary.length === 0
    ? ""
    : `<dl id="session-summary">${options.summary.map(([name, value]) => `<div><dt>${escape(name)}</dt><dd>${escape(value)}</dd></div>`).join("")}</dl>`
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${policy}">
<meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<style>${STYLE}</style>
</head><body>
<header><b>agent-loop inspector</b><nav id="nav"></nav><span class="live" id="live-status"></span></header>${summary}
<main id="app"><p class="dim">Loading…</p></main>
${data}<script>${SCRIPT}</script>
</body></html>
`
}
