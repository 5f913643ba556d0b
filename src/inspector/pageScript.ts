/**
 * The inspector page's script, as text (it is served inline and allowed by its hash). Plain
 * browser JavaScript, no framework: hash routes for the session list, a session's conversation and
 * a turn's timeline, live updates from the server-sent events of `api/events`.
 *
 * The token comes in the page's URL (`?token=`) the first time; the script keeps it in the tab's
 * `sessionStorage` (this origin's, port included), takes it out of the address bar, and sends it in
 * the `X-Agent-Loop-Token` header with every request of data. So the live events are read with
 * `fetch` and parsed here: `EventSource` cannot send a header.
 *
 * Every piece of session text reaches the page as a text node (`textContent`); the script never
 * writes HTML from data. Images are shown only from inline base64 data of an image type.
 */
import { CONTENT } from "./pageContent.ts"
import { DETAILS } from "./pageDetails.ts"
import { FIND } from "./pageFind.ts"
import { TIMELINE } from "./pageTimeline.ts"
import { VIRTUAL } from "./pageVirtual.ts"

export const SCRIPT = String.raw`(function () {
"use strict";
var dataBlock = document.getElementById("inspector-data");
var STATIC = dataBlock ? JSON.parse(dataBlock.textContent) : null;
var app = document.getElementById("app");
var PAGE = 200;
var IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
var TOKEN = STATIC ? null : takeToken();

function takeToken() {
  var key = "agent-loop-inspector-token", given = new URLSearchParams(location.search).get("token"), kept = null;
  try {
    if (given) sessionStorage.setItem(key, given);
    kept = sessionStorage.getItem(key);
  } catch (e) { /* storage refused: the token lasts as long as the page */ }
  if (location.search.indexOf("token=") >= 0) history.replaceState(null, "", location.pathname + location.hash);
  return given || kept;
}
function authorized(headers) { headers["X-Agent-Loop-Token"] = TOKEN; return headers; }

function el(tag, props, children) {
  var node = document.createElement(tag);
  if (props) for (var k in props) {
    if (k === "text") node.textContent = props[k];
    else if (k === "className") node.className = props[k];
    else if (k === "href") node.setAttribute("href", props[k]);
    else if (k.indexOf("data-") === 0 || k.indexOf("aria-") === 0 || k === "role" || k === "tabindex" || k === "title" || k === "type" || k === "placeholder") node.setAttribute(k, props[k]);
    else node[k] = props[k];
  }
  (children || []).forEach(function (c) { if (c != null) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
  return node;
}
function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
function fmtTime(ms) { return ms == null ? "" : new Date(ms).toLocaleString(); }
function fmtNum(n) { return n == null ? "" : String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
function fmtCost(usd) { return usd == null ? "" : "$" + usd.toFixed(usd < 0.01 ? 4 : 2); }
function fmtMs(ms) { return ms < 1000 ? Math.round(ms) + " ms" : (ms / 1000).toFixed(2) + " s"; }
function tokens(u) { return u ? fmtNum(u.inputTokens) + " in / " + fmtNum(u.outputTokens) + " out" : ""; }
function sessionHref(key) { return "#/s/" + encodeURIComponent(key); }
function timelineHref(key, id) { return sessionHref(key) + "/t/" + encodeURIComponent(id); }

function api(path, params) {
  if (STATIC) return Promise.resolve(fromStatic(path, params));
  if (!TOKEN) return Promise.reject(new Error("this tab has no token: open the address agent-loop printed, with its ?token="));
  var query = new URLSearchParams(params || {}).toString();
  return fetch("api/" + path + (query ? "?" + query : ""), { credentials: "omit", headers: authorized({}) }).then(function (r) {
    if (!r.ok) throw new Error(r.status + " " + r.statusText);
    return r.json();
  });
}
function fromStatic(path, params) {
  var s = STATIC.session;
  if (path === "sessions") return { total: 1, offset: 0, items: [STATIC.row] };
  if (path.indexOf("timeline/") === 0) return STATIC.timelines[decodeURIComponent(path.split("/")[2])] || null;
  var offset = Number(params && params.offset || 0), limit = Number(params && params.limit || PAGE);
  return { sessionKey: s.sessionKey, total: s.items.length, offset: offset, items: s.items.slice(offset, offset + limit), turns: s.turns, calls: s.calls };
}

function route() {
  var parts = location.hash.replace(/^#\/?/, "").split("/");
  if (parts[0] === "s" && parts[1] != null && parts[2] === "t") return { view: "timeline", key: decodeURIComponent(parts[1]), turn: decodeURIComponent(parts[3] || ""), row: parts[4] ? decodeURIComponent(parts[4]) : null };
  if (parts[0] === "s" && parts[1] != null) return { view: "session", key: decodeURIComponent(parts[1]), offset: Number(parts[2] || 0) };
  if (parts[0] === "cluster") return { view: "cluster" };
  if (STATIC) return { view: "session", key: STATIC.session.sessionKey, offset: 0 };
  return { view: "list" };
}
var state = { q: "", offset: 0 };
function render() {
  var r = route();
  // an exported file keeps the title it was written with
  if (!STATIC) document.title = pageTitle(r);
  var nav = document.getElementById("nav");
  clear(nav);
  nav.appendChild(el("a", { href: "#/", text: STATIC ? "session" : "sessions" }));
  if (!STATIC) { nav.appendChild(document.createTextNode(" · ")); nav.appendChild(el("a", { href: "#/cluster", text: "cluster" })); }
  var p = r.view === "list" ? renderList() : r.view === "session" ? renderSession(r.key, r.offset) : r.view === "timeline" ? renderTimeline(r.key, r.turn, r.row) : renderCluster();
  return p.then(function () { showStreaming(); if (performance.mark) performance.mark("inspector:drawn"); }, function (e) { clear(app); app.appendChild(el("p", { className: "error", text: "Could not load: " + e.message })); });
}

function renderList() {
  var params = listParams(), query = listQuery(params);
  return api("sessions", query).then(function (page) {
    clear(app);
    app.appendChild(el("div", { className: "pager filters" }, listFilters(params).concat([el("span", { className: "dim", id: "session-count", text: fmtNum(page.total) + " sessions" })])));
    var body = el("tbody");
    page.items.forEach(function (s) {
      body.appendChild(el("tr", { "data-session": s.sessionKey }, [
        el("td", { text: fmtTime(s.updatedAt) }),
        el("td", null, [s.status ? el("span", { className: "badge " + (s.status === "completed" ? "ok" : s.status === "running" ? "" : "bad"), text: s.status }) : null]),
        el("td", { text: s.workspace || "-" }),
        el("td", { className: "num", text: fmtNum(s.turns) }),
        el("td", { className: "num", text: fmtNum(s.messages) }),
        el("td", { className: "num", text: s.usage ? fmtNum(s.usage.inputTokens + s.usage.outputTokens) : "" }),
        el("td", { className: "num", text: s.usage ? fmtCost(s.usage.costUsd) : "" }),
        el("td", null, [el("a", { href: sessionHref(s.sessionKey), text: s.preview || s.sessionKey }), s.match ? el("div", { className: "match dim", text: s.match }) : null, s.problem ? el("div", { className: "dim", text: s.problem }) : null])
      ]));
    });
    var head = el("tr", null, ["when", "last turn", "workspace", "turns", "messages", "tokens", "cost", "first prompt"].map(function (h) { return el("th", { text: h }); }));
    app.appendChild(el("table", { id: "sessions" }, [el("thead", null, [head]), body]));
    app.appendChild(pager(page, 50, function (o) { var p = listParams(); if (o > 0) p.set("offset", String(o)); else p.delete("offset"); setListParams(p); }));
  });
}

function pager(page, size, go) {
  var box = el("div", { className: "pager" });
  if (page.total <= size) return box;
  var prev = el("button", { text: "‹ previous", disabled: page.offset <= 0 });
  var next = el("button", { text: "next ›", disabled: page.offset + size >= page.total });
  var last = el("button", { text: "last »", disabled: page.offset + size >= page.total });
  prev.addEventListener("click", function () { go(Math.max(0, page.offset - size)); });
  next.addEventListener("click", function () { go(page.offset + size); });
  last.addEventListener("click", function () { go(Math.floor((page.total - 1) / size) * size); });
  box.appendChild(prev); box.appendChild(el("span", { className: "dim", text: (page.offset + 1) + "–" + Math.min(page.total, page.offset + size) + " of " + fmtNum(page.total) })); box.appendChild(next); box.appendChild(last);
  return box;
}

function renderCluster() {
  return api("cluster").then(function (c) {
    clear(app);
    if (!c.runners) { app.appendChild(el("p", { className: "dim", text: "Not running in a cluster." })); return; }
    app.appendChild(el("h2", { text: "Runners" }));
    app.appendChild(el("table", { id: "runners" }, c.runners.map(function (r) { return el("tr", null, [el("td", { text: r.address }), el("td", { text: r.healthy ? "healthy" : "unhealthy" }), el("td", { text: fmtTime(r.lastHeartbeat) })]); })));
    app.appendChild(el("h2", { text: "Sessions in flight" }));
    app.appendChild(el("table", { id: "in-flight" }, c.sessions.map(function (s) { return el("tr", null, [el("td", null, [el("a", { href: sessionHref(s.sessionKey), text: s.sessionKey })]), el("td", { text: s.runner || "" })]); })));
  });
}

var pending = null;
var streaming = { key: null, text: "" };
function showStreaming() {
  var r = route(), box = document.getElementById("live-text");
  if (r.view !== "session" || r.key !== streaming.key || !streaming.text) { if (box) box.remove(); return; }
  // after the conversation, as the entry it will become
  if (!box) {
    box = el("div", { id: "live-text", className: "msg assistant streaming", title: "the model's answer as it streams", "aria-live": "polite" }, [el("div", { className: "who", text: "assistant \u00b7 streaming\u2026" }), el("div", { className: "text" })]);
    app.appendChild(box);
  }
  box.lastChild.textContent = streaming.text;
}
function refreshSoon() { if (pending) return; pending = setTimeout(function () { pending = null; render(); }, 250); }
function onEvent(e) {
  var r = route();
  trackRunning(e);
  if (e._tag === "LLMRequest" && e.depth === 0) streaming = { key: e.sessionKey, text: "" };
  if (e._tag === "TurnEnd" && e.depth === 0 && streaming.key === e.sessionKey) streaming = { key: null, text: "" };
  if (e._tag === "LLMDelta") {
    if (e.kind === "text" && e.depth === 0 && streaming.key === e.sessionKey) { streaming.text += e.text; showStreaming(); }
    return;
  }
  if ((r.view === "list" && !typingInFilters()) || ((r.view === "session" || r.view === "timeline") && r.key === e.sessionKey)) refreshSoon();
}
// One server-sent event (its lines without the blank line ending it): "reset", or an event's JSON.
function onFrame(block, seen) {
  var type = "message", data = [];
  block.split(/\r?\n/).forEach(function (line) {
    if (line === "" || line.charAt(0) === ":") return;
    var at = line.indexOf(":"), field = at < 0 ? line : line.slice(0, at), value = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
    if (field === "id") seen(value);
    else if (field === "event") type = value;
    else if (field === "data") data.push(value);
  });
  if (type === "reset") refreshSoon();
  else if (data.length) onEvent(JSON.parse(data.join("\n")));
}
// The live events, read with fetch (the token goes in a header) and reconnecting from the last id seen.
function live() {
  if (STATIC || !TOKEN || typeof ReadableStream === "undefined") return;
  var status = document.getElementById("live-status"), lastId = null, wait = 1000;
  function seen(id) { lastId = id; }
  function retry() { status.textContent = "reconnecting…"; setTimeout(connect, wait); wait = Math.min(wait * 2, 15000); }
  function connect() {
    var headers = authorized({ Accept: "text/event-stream" });
    if (lastId !== null) headers["Last-Event-ID"] = lastId;
    fetch("api/events", { credentials: "omit", cache: "no-store", headers: headers }).then(function (response) {
      if (response.status === 403) { status.textContent = "not allowed: open the address agent-loop printed"; return; }
      if (!response.ok || !response.body) return retry();
      status.textContent = "live"; wait = 1000;
      var reader = response.body.getReader(), decoder = new TextDecoder(), buffer = "";
      function pump() {
        return reader.read().then(function (chunk) {
          if (chunk.done) return retry();
          buffer += decoder.decode(chunk.value, { stream: true });
          var end;
          while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
            var block = buffer.slice(0, end);
            buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
            onFrame(block, seen);
          }
          return pump();
        });
      }
      return pump();
    }).catch(retry);
  }
  connect();
}
` + CONTENT + VIRTUAL + TIMELINE + DETAILS + FIND + String.raw`
window.addEventListener("hashchange", render);
initTheme();
render();
live();
})();
`
