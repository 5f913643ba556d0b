/**
 * The part of the page's script that finds things and keeps the page readable anywhere: the
 * session list's query and filters live in the URL (`#/?q=…&status=…&model=…&from=…&to=…`), so a
 * search can be linked and survives a reload; each page has its own tab title; each entry of the
 * conversation has a link of its own (`#/s/KEY/N` opens the conversation at entry N); a dark theme
 * follows `prefers-color-scheme` unless the header's toggle chose; and a running turn's timeline is
 * drawn again every second, so the call in flight grows. Functions of the page's one script (see
 * `pageScript.ts`); no back-quotes or dollar-brace in it.
 */
export const FIND = String.raw`
// The list's query and filters, from the URL's hash ("#/?q=...").
function listParams() {
  var at = location.hash.indexOf("?");
  return new URLSearchParams(at < 0 ? "" : location.hash.slice(at + 1));
}
function setListParams(params) {
  var text = params.toString();
  location.hash = "#/" + (text ? "?" + text : "");
}
// The filters of the session list; a change writes them to the URL (which draws the list again).
function listFilters(params) {
  var search = el("input", { type: "search", placeholder: "Search messages, tool names, errors, keys", value: params.get("q") || "", id: "search", "aria-label": "search sessions" });
  var status = el("select", { id: "status-filter", "aria-label": "status" }, ["", "running", "completed", "failed", "interrupted", "aborted", "blocked", "max_iterations"].map(function (s) {
    return el("option", { value: s, text: s || "any status", selected: (params.get("status") || "") === s });
  }));
  var model = el("input", { type: "search", id: "model-filter", placeholder: "model", value: params.get("model") || "", "aria-label": "model" });
  var from = el("input", { type: "date", id: "from-filter", value: params.get("from") || "", "aria-label": "updated from" });
  var to = el("input", { type: "date", id: "to-filter", value: params.get("to") || "", "aria-label": "updated until" });
  var fields = { q: search, status: status, model: model, from: from, to: to };
  function apply() {
    var p = new URLSearchParams();
    for (var k in fields) if (fields[k].value) p.set(k, fields[k].value);
    setListParams(p);
  }
  for (var k in fields) fields[k].addEventListener("change", apply);
  return [search, status, model, from, to];
}
// The list's query for the API: the URL's filters and page.
function listQuery(params) {
  var query = { q: params.get("q") || "", offset: Number(params.get("offset") || 0), limit: 50 };
  ["status", "model", "from", "to"].forEach(function (k) { if (params.get(k)) query[k] = params.get(k); });
  return query;
}
function pageTitle(r) {
  var base = "agent-loop inspector";
  if (r.view === "list") { var q = listParams().get("q"); return (q ? "\u201c" + q + "\u201d \u00b7 sessions" : "Sessions") + " \u00b7 " + base; }
  if (r.view === "session") return r.key + " \u00b7 " + base;
  if (r.view === "timeline") return "Turn " + r.turn + " \u00b7 " + r.key + " \u00b7 " + base;
  return "Cluster \u00b7 " + base;
}
// The conversation's entries each get a link to themselves.
if (typeof entry === "function") {
  var drawEntry = entry;
  entry = function (e, index, calls) {
    var box = drawEntry(e, index, calls), head = box.querySelector(".who"), r = route();
    if (head && r.key != null) head.insertBefore(el("a", { href: sessionHref(r.key) + "/" + index, className: "anchor", title: "link to entry " + index, "aria-label": "link to entry " + index, text: "\u00b6" }), head.firstChild);
    return box;
  };
}
// The theme: the system's unless chosen with the header's button (kept in this browser).
function initTheme() {
  var key = "agent-loop-inspector-theme", chosen = null;
  try { chosen = localStorage.getItem(key); } catch (e) { /* storage refused */ }
  var dark = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  function effective() { return document.documentElement.getAttribute("data-theme") || (dark && dark.matches ? "dark" : "light"); }
  if (chosen === "dark" || chosen === "light") document.documentElement.setAttribute("data-theme", chosen);
  var button = el("button", { id: "theme-toggle", type: "button", className: "theme-toggle" });
  function label() { var now = effective(); button.textContent = now === "dark" ? "\u2600 light" : "\u263e dark"; button.setAttribute("aria-label", now === "dark" ? "switch to the light theme" : "switch to the dark theme"); }
  button.addEventListener("click", function () {
    var next = effective() === "dark" ? "light" : "dark";
    document.documentElement.setAttribute("data-theme", next);
    try { localStorage.setItem(key, next); } catch (e) { /* kept for this page only */ }
    label();
  });
  if (dark && dark.addEventListener) dark.addEventListener("change", label);
  label();
  var header = document.querySelector("header");
  if (header) header.appendChild(button);
}
// Turns running now (from the live events): their timelines are drawn again every second.
var runningTurns = {};
function trackRunning(e) {
  if (e._tag === "TurnStart") runningTurns[e.turnId] = true;
  else if (e._tag === "TurnEnd") delete runningTurns[e.turnId];
}
// ...and those whose timeline came running (the page was opened after the turn started)
var fetchApi = api;
api = function (path, params) {
  return fetchApi(path, params).then(function (data) {
    if (path.indexOf("timeline/") === 0 && data && data.turnId) {
      if (data.source === "events" && (!data.status || data.status === "running")) runningTurns[data.turnId] = true;
      else delete runningTurns[data.turnId];
    }
    return data;
  });
};
setInterval(function () {
  var r = route();
  if (r.view === "timeline" && runningTurns[r.turn] && !document.hidden) refreshSoon();
}, 1000);
// Typing in the list's filters is not interrupted by live updates.
function typingInFilters() {
  var a = document.activeElement;
  return !!(a && a.closest && a.closest(".filters"));
}
`

/**
 * The page's dark theme and narrow layout (added to the style sheet in `page.ts`): the page's
 * colour variables and its few fixed colours for `prefers-color-scheme: dark` (unless the toggle
 * chose light) or the toggle's dark; at 600 px and less the header wraps, tables scroll sideways
 * and the filters stack.
 */
export const THEME_STYLE = `
.filters{flex-wrap:wrap}.filters select,.filters input{padding:4px 6px;border:1px solid var(--line);border-radius:4px;background:var(--bg);color:var(--fg)}
.match{font-size:12px;margin-top:2px}.msg .who a.anchor{color:var(--dim);margin-right:4px}
.mark.steering{background:#1f9d8b}.mark.error{background:var(--err)}
.theme-toggle{margin-left:auto;font-size:12px;padding:1px 8px;border:1px solid var(--line);border-radius:4px;background:var(--bg);color:var(--fg);cursor:pointer}
:root[data-theme=dark]{--fg:#e4e7ec;--dim:#9aa4b2;--line:#343b47;--bg:#14171c;--soft:#1d2128;--model:#6d9cf5;--tool:#3cb97c;--turn:#7d8796;--err:#f06b6b;color-scheme:dark}
:root[data-theme=dark] a{color:#8ab4ff}:root[data-theme=dark] .msg.user{background:#1a2333}:root[data-theme=dark] .msg.tool{background:#17261e}
:root[data-theme=dark] .msg.tool.error{background:#301c1c}:root[data-theme=dark] .msg.compaction{background:#2b2616}:root[data-theme=dark] .badge.ok{background:#1f3a2a}
:root[data-theme=dark] .badge.bad{background:#4a2020}:root[data-theme=dark] .failure{color:#f28b82}:root[data-theme=dark] .mark:not([class*=" "]){background:#e4e7ec}
:root[data-theme=dark] .tok-k{color:#d2a8ff}:root[data-theme=dark] .tok-s{color:#7ee787}:root[data-theme=dark] .tok-c{color:#8b949e}:root[data-theme=dark] .tok-n{color:#79c0ff}:root[data-theme=dark] .tok-key{color:#ffa657}
:root[data-theme=dark] .d-add{background:#1b3a24}:root[data-theme=dark] .d-del{background:#4a1f22}
@media (prefers-color-scheme:dark){
:root:not([data-theme=light]){--fg:#e4e7ec;--dim:#9aa4b2;--line:#343b47;--bg:#14171c;--soft:#1d2128;--model:#6d9cf5;--tool:#3cb97c;--turn:#7d8796;--err:#f06b6b;color-scheme:dark}
:root:not([data-theme=light]) a{color:#8ab4ff}:root:not([data-theme=light]) .msg.user{background:#1a2333}:root:not([data-theme=light]) .msg.tool{background:#17261e}
:root:not([data-theme=light]) .msg.tool.error{background:#301c1c}:root:not([data-theme=light]) .msg.compaction{background:#2b2616}:root:not([data-theme=light]) .badge.ok{background:#1f3a2a}
:root:not([data-theme=light]) .badge.bad{background:#4a2020}:root:not([data-theme=light]) .failure{color:#f28b82}:root:not([data-theme=light]) .mark:not([class*=" "]){background:#e4e7ec}
:root:not([data-theme=light]) .tok-k{color:#d2a8ff}:root:not([data-theme=light]) .tok-s{color:#7ee787}:root:not([data-theme=light]) .tok-c{color:#8b949e}:root:not([data-theme=light]) .tok-n{color:#79c0ff}:root:not([data-theme=light]) .tok-key{color:#ffa657}
:root:not([data-theme=light]) .d-add{background:#1b3a24}:root:not([data-theme=light]) .d-del{background:#4a1f22}
}
@media (max-width:600px){
header{flex-wrap:wrap;gap:6px 12px;padding:6px 10px}main{padding:8px 10px}#session-summary{padding:6px 10px}
#sessions{display:block;overflow-x:auto;white-space:nowrap}.filters input[type=search]{width:100%}.filters select,.filters input[type=date]{flex:1 1 40%}
.layout{grid-template-columns:1fr}.row{grid-template-columns:96px 1fr}.msg{max-width:100%}img.part{max-width:100%}
}
`
