/**
 * The part of the page's script that opens a call's details beside the timeline: for a model call
 * its request (the model, the tools offered, the options set, the messages it was sent: the log up
 * to its reply) and its response (text, reasoning, tool calls), tokens, cost, latency, retries and errors;
 * for a tool call its arguments, result, duration, wait, status and sub-turn; for a turn its input
 * and outcome; for an event, the event itself. Every part can be copied; Esc closes the panel and
 * gives the focus back to the row that opened it. Functions of the page's one script (see
 * `pageScript.ts`); no back-quotes or dollar-brace in it.
 */
export const DETAILS = String.raw`
var detailsOpener = null;
function closeDetails() {
  var d = document.getElementById("details");
  if (!d) return;
  d.remove();
  if (detailsOpener && detailsOpener.isConnected) detailsOpener.focus();
  detailsOpener = null;
}
document.addEventListener("keydown", function (ev) { if (ev.key === "Escape" && document.getElementById("details")) { ev.preventDefault(); closeDetails(); } });
window.addEventListener("hashchange", function () { detailsOpener = null; closeDetails(); });
function panel(title, opener) {
  var old = document.getElementById("details");
  if (old) old.remove();
  detailsOpener = opener || null;
  var close = el("button", { type: "button", className: "close", text: "×", "aria-label": "close the details" });
  close.addEventListener("click", closeDetails);
  var body = el("div", { className: "details-body" });
  var box = el("aside", { id: "details", role: "dialog", "aria-labelledby": "details-title", tabindex: "-1" }, [el("div", { className: "details-head" }, [el("h2", { id: "details-title", text: title }), close]), body]);
  document.body.appendChild(box);
  box.focus();
  return body;
}
function facts(pairs) {
  var dl = el("dl", { className: "facts" });
  pairs.forEach(function (p) { if (p[1] === "" || p[1] == null) return; dl.appendChild(el("dt", { text: p[0] })); dl.appendChild(el("dd", { className: p[2] || "", text: String(p[1]) })); });
  return dl;
}
function section(title, copy, children) {
  var head = el("h3", null, [title]);
  if (copy) head.appendChild(copyButton(copy));
  return el("section", { className: "detail", "data-part": title.toLowerCase() }, [head].concat(children));
}
// Entries from..to of the session's log, in requests of at most 1,000.
function loadEntries(key, from, to) {
  var asks = [];
  for (var o = from; o < to; o += 1000) asks.push(api("session/" + encodeURIComponent(key), { offset: o, limit: Math.min(1000, to - o) }).then(function (p) { return p.items; }));
  return Promise.all(asks).then(function (all) { return [].concat.apply([], all); });
}
function json(value) { return JSON.stringify(value, null, 2); }
// The messages a model call was sent: the last ones first, earlier ones on request.
function requestMessages(key, upTo, into) {
  var shownFrom = upTo, list = el("div", { className: "request-messages" }), more = el("button", { type: "button", className: "expander" });
  function earlier(n) {
    var from = Math.max(0, shownFrom - n);
    return loadEntries(key, from, shownFrom).then(function (items) {
      var first = list.firstChild;
      items.forEach(function (it) { list.insertBefore(entry(it.entry, it.index, {}), first); });
      shownFrom = from;
      more.textContent = "Show " + Math.min(50, shownFrom) + " earlier of " + shownFrom;
      more.hidden = shownFrom === 0;
    });
  }
  more.addEventListener("click", function () { earlier(50); });
  into.appendChild(more); into.appendChild(list);
  return earlier(10);
}
function relatedRow(t, e) {
  return t.rows.find(function (r) {
    if (r.turnId !== e.turnId) return false;
    if (e.toolCallId != null) return r.kind === "tool" && r.callId === e.toolCallId;
    if (/^LLM/.test(e._tag)) return r.kind === "model" && r.iteration === e.iteration;
    return r.kind === "turn" && (e._tag === "TurnStart" || e._tag === "TurnEnd");
  });
}
function openEvent(key, t, e, opener) {
  var row = relatedRow(t, e);
  if (row) return openRow(key, t, row, opener, e);
  var body = panel("Event: " + e._tag, opener);
  body.appendChild(facts([["at", "+" + fmtMs(e.at - t.start)], ["turn", e.turnId], ["iteration", e.iteration]]));
  body.appendChild(section("Event", function () { return json(e); }, [folded(json(e), function (x) { return highlight(x, "json"); })]));
}
function openRow(key, t, r, opener, event) {
  var body = panel((r.kind === "model" ? "Model call: " : r.kind === "tool" ? "Tool call: " : "Turn: ") + r.label, opener);
  body.setAttribute("data-row", r.id);
  var own = t.events.filter(function (e) { return e.turnId === r.turnId; }), timed = t.source === "events";
  var latency = timed && r.end != null ? fmtMs(r.end - r.start) : timed ? "running" : "";
  var find = function (tag, test) { return own.find(function (e) { return e._tag === tag && test(e); }); };
  var located = r.turnId === t.turnId;
  if (r.kind === "model") {
    var same = function (e) { return e.iteration === r.iteration; };
    var req = find("LLMRequest", same), res = find("LLMResponse", same);
    var retries = own.filter(function (e) { return e._tag === "LLMRetry" && e.iteration === r.iteration; });
    var errors = own.filter(function (e) { return e._tag === "Error" && e.iteration === r.iteration; });
    var usage = r.usage || (res && res.usage);
    body.appendChild(facts([
      ["model", (req && req.model) || (res && res.model) || t.model || ""], ["iteration", r.iteration],
      ["latency", res ? fmtMs(res.durationMs) : latency], ["tokens", tokens(usage)], ["cost", usage && usage.costUsd != null ? fmtCost(usage.costUsd) : ""],
      ["finish", res ? res.finishReason : ""], ["retries", retries.length ? String(retries.length) : timed ? "none" : ""],
      ["error", errors.map(function (e) { return e.stage + ": " + e.message; }).join("; ") || (r.error ? "failed" : ""), "failure"]
    ]));
    if (retries.length) body.appendChild(section("Retries", null, retries.map(function (e) { return el("div", { className: "failure", text: "attempt " + e.attempt + " after " + fmtMs(e.delayMs) + ": " + e.reason }); })));
    var request = section("Request", r.logIndex != null && located ? function () { return loadEntries(key, 0, r.logIndex).then(function (items) { return json({ model: req ? req.model : t.model, tools: req ? req.tools || req.toolCount : undefined, options: req ? req.options : undefined, messages: items.map(function (it) { return it.entry; }) }); }); } : null, [
      el("p", { className: "dim", text: (req ? req.messageCount + " messages, " + req.toolCount + " tools offered" : "") + (r.logIndex != null && located ? (req ? " · " : "") + "the log up to entry #" + r.logIndex + " (the context sent, compacted parts included)" : req ? "" : "not recorded") })
    ]);
    if (req && req.tools) request.appendChild(facts([["tools", req.tools.join(", ") || "none"]]));
    if (req && req.options) request.appendChild(el("div", null, [el("div", { className: "dim", text: "options" }), highlight(json(req.options), "json")]));
    body.appendChild(request);
    if (r.logIndex != null && located) requestMessages(key, r.logIndex, request);
    var response = section("Response", function () { return res ? json({ content: res.content, toolCalls: res.toolCalls, finishReason: res.finishReason, usage: res.usage }) : r.logIndex != null ? loadEntries(key, r.logIndex, r.logIndex + 1).then(function (it) { return json(it[0].entry); }) : r.detail || ""; }, []);
    body.appendChild(response);
    if (r.logIndex != null && located) loadEntries(key, r.logIndex, r.logIndex + 1).then(function (items) { response.appendChild(entry(items[0].entry, items[0].index, {})); });
    else if (res) response.appendChild(entry({ role: "assistant", content: res.content, toolCalls: res.toolCalls }, r.iteration, {}));
    else response.appendChild(el("p", { className: "dim", text: r.end == null ? "no response yet" : r.detail || "" }));
  } else if (r.kind === "tool") {
    var byCall = function (e) { return e.toolCallId === r.callId; };
    var start = find("ToolExecStart", byCall), end = find("ToolExecEnd", byCall), skipped = find("ToolExecSkipped", byCall);
    body.appendChild(facts([
      ["tool", start ? start.toolName : r.label], ["call id", r.callId], ["iteration", r.iteration],
      ["duration", end ? fmtMs(end.durationMs) : latency], ["waited", r.waitFrom != null ? fmtMs(r.start - r.waitFrom) + " (hooks, approval)" : ""],
      ["status", skipped ? "not run: " + skipped.reason : end ? (end.isError ? "failed" : "ok") : r.error ? "failed" : timed ? "running" : "", r.error ? "failure" : ""]
    ]));
    var args = section("Arguments", function () { return start ? pretty(start.arguments) : ""; }, []);
    var result = section("Result", function () { return end ? end.result : ""; }, []);
    body.appendChild(args); body.appendChild(result);
    if (start) args.appendChild(argumentsView(start.toolName, start.arguments));
    if (end) result.appendChild(folded(end.result, mono));
    if (skipped) result.appendChild(el("p", { className: "failure", text: skipped.reason }));
    if (!start && r.callIndex != null) loadEntries(key, r.callIndex, r.callIndex + 1).then(function (items) {
      var call = (items[0].entry.toolCalls || []).find(function (c) { return c.id === r.callId; });
      if (call) args.appendChild(argumentsView(call.name, call.arguments));
    });
    if (!end && r.logIndex != null) loadEntries(key, r.logIndex, r.logIndex + 1).then(function (items) { parts(items[0].entry.content, mono).forEach(function (n) { result.appendChild(n); }); });
    var at = t.rows.indexOf(r), child = t.rows.slice(at + 1).find(function (x) { return x.level <= r.level || x.kind === "turn"; });
    if (child && child.kind === "turn" && child.level > r.level) {
      body.appendChild(section("Sub-turn", null, [el("a", { href: timelineHref(key, child.turnId), text: "its own timeline" }), subTurnView(key, child.turnId)]));
    }
  } else {
    var ended = find("TurnEnd", function () { return true; }), started = find("TurnStart", function () { return true; });
    body.appendChild(facts([
      ["status", r.status || t.status || "", r.error ? "failure" : ""], ["duration", latency], ["iterations", ended ? ended.iterations : ""],
      ["model", t.model || ""], ["tokens", tokens(r.usage || t.usage)], ["cost", (r.usage || t.usage) && (r.usage || t.usage).costUsd != null ? fmtCost((r.usage || t.usage).costUsd) : ""],
      ["error", (ended && ended.error) || (r.level === 0 && t.error ? t.error._tag + ": " + t.error.message : "") || (r.error && r.detail ? r.detail : ""), "failure"]
    ]));
    if (started) body.appendChild(section("Input", function () { return typeof started.input === "string" ? started.input : json(started.input); }, parts(started.input, markdown)));
    if (r.level > 0) body.appendChild(el("p", null, [el("a", { href: timelineHref(key, r.turnId), text: "the sub-turn's own timeline" })]));
  }
  if (event) body.appendChild(section("Event", function () { return json(event); }, [el("p", { className: "dim", text: event._tag + " at +" + fmtMs(event.at - t.start) }), folded(json(event), function (x) { return highlight(x, "json"); })]));
}
`
