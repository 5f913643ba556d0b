/**
 * The part of the page's script that draws a turn's timeline: a time axis, zoom (buttons,
 * Ctrl+wheel) and pan (buttons, dragging, a sideways wheel) over the bars, each model call's
 * iteration foldable, the bars and the events drawn virtually (a 500-iteration turn keeps a few
 * dozen rows in the page), failures in red, and the context chart sized for any number of calls.
 * A click on a bar or an event row, or Enter on it, opens its details (`pageDetails.ts`).
 * Functions of the page's one script (see `pageScript.ts`); no back-quotes or dollar-brace in it.
 */
export const TIMELINE = String.raw`
var ROW_PX = 24, EVENT_PX = 22, timelineKept = null;
function niceStep(width) {
  var raw = width / 6, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}
function place(node, from, to, view) {
  var w = view.to - view.from;
  var a = Math.max(from, view.from), b = Math.min(to, view.to);
  if (b < a || (b === a && (from < view.from || from > view.to))) { node.style.display = "none"; return; }
  node.style.left = ((a - view.from) / w * 100).toFixed(3) + "%";
  node.style.width = Math.max(0, (b - a) / w * 100).toFixed(3) + "%";
}
// Which rows each iteration's model call folds: the rows after it up to the turn's next model call.
function iterationGroups(t) {
  var members = {}, head = -1;
  t.rows.forEach(function (r, i) {
    if (r.level === 0) { head = -1; return; }
    if (r.level === 1 && r.kind === "model") { head = i; members[i] = []; return; }
    if (r.level === 1 && r.kind === "turn") { head = -1; return; }
    if (head >= 0) members[head].push(i);
  });
  return members;
}
function renderTimeline(key, turnId, rowId) {
  return api("timeline/" + encodeURIComponent(key) + "/" + encodeURIComponent(turnId)).then(function (t) {
    // a row of the same turn that had the focus before it is drawn again (live) gets it back
    var focused = timelineKept && timelineKept.id === key + "/" + turnId && timelineKept.box.contains(document.activeElement) ? timelineKept.rows.focus : null;
    clear(app);
    app.appendChild(el("p", null, [el("a", { href: sessionHref(key), text: "← " + key })]));
    if (!t) { app.appendChild(el("p", { text: "No such turn." })); return; }
    var timed = t.source === "events", span = Math.max(1, t.end - t.start), failed = t.status && t.status !== "completed" && t.status !== "running";
    app.appendChild(el("h2", { className: failed ? "failure" : "", text: "Turn: " + (t.rows[0] ? t.rows[0].label : t.turnId) + (t.status ? " · " + t.status : "") }));
    app.appendChild(el("p", { className: "dim", id: "summary", text: (timed ? fmtMs(t.end - t.start) + " · " : "Order only: this turn's events were not recorded, so the log gives its calls but not their times · ") + (t.model ? t.model + " · " : "") + fmtNum(t.rows.filter(function (r) { return r.kind === "model"; }).length) + " model calls · " + tokens(t.usage) + (t.usage && t.usage.costUsd != null ? " · " + fmtCost(t.usage.costUsd) : "") }));
    if (t.error) app.appendChild(el("p", { className: "failure", id: "turn-error", text: t.error._tag + ": " + t.error.message }));

    // drawn again (live), the same turn keeps its zoom, folds and scroll; zoomed out fully it follows the turn's growth
    var kept = timelineKept && timelineKept.id === key + "/" + turnId ? timelineKept : null;
    var view = kept && kept.view.to < kept.span ? kept.view : { from: 0, to: span }, folded = kept ? kept.folded : {}, groups = iterationGroups(t), visible = [];
    function computeVisible() {
      var hidden = {};
      for (var h in folded) if (folded[h]) groups[h].forEach(function (i) { hidden[i] = true; });
      visible = [];
      t.rows.forEach(function (r, i) { if (!hidden[i]) visible.push(i); });
    }
    computeVisible();
    var status = el("span", { className: "dim zoom-status", "aria-live": "polite" });
    function button(text, label, act) { var b = el("button", { type: "button", text: text, "aria-label": label, title: label }); b.addEventListener("click", act); return b; }
    function zoom(factor, at) {
      var w = view.to - view.from, c = at == null ? view.from + w / 2 : at, nw = Math.min(span, Math.max(span / 2000, w * factor, timed ? 1 : 0.5));
      var from = Math.max(0, Math.min(span - nw, c - (c - view.from) * nw / w));
      view = { from: from, to: from + nw }; redraw();
    }
    function pan(fraction) {
      var w = view.to - view.from, from = Math.max(0, Math.min(span - w, view.from + w * fraction));
      view = { from: from, to: from + w }; redraw();
    }
    function setFoldAll(on) { for (var h in groups) folded[h] = on && groups[h].length > 0; computeVisible(); rows.redraw(visible.length); }
    var tools = el("div", { className: "toolbar", role: "toolbar", "aria-label": "timeline" }, [
      button("+", "zoom in", function () { zoom(0.5); }), button("−", "zoom out", function () { zoom(2); }),
      button("Fit", "Fit: show the whole turn", function () { view = { from: 0, to: span }; redraw(); }),
      button("◀", "pan left", function () { pan(-0.25); }), button("▶", "pan right", function () { pan(0.25); }),
      button("Fold all", "Fold all iterations", function () { setFoldAll(true); }), button("Unfold all", "Unfold all iterations", function () { setFoldAll(false); }),
      status
    ]);
    var axis = el("div", { className: "row axis", "aria-hidden": "true" }, [el("div", { className: "name dim", text: timed ? "time" : "step" }), el("div", { className: "track ticks" })]);
    var box = el("div", { className: "v-box gantt-rows", id: "gantt-rows", "aria-label": "calls of the turn: arrows move, Enter opens, Left and Right fold" });
    var gantt = el("div", { className: "gantt", id: "gantt" }, [tools, axis, box]);
    function drawAxis() {
      var ticks = axis.lastChild, w = view.to - view.from, step = niceStep(w);
      clear(ticks);
      for (var x = Math.ceil(view.from / step) * step; x <= view.to; x += step) {
        var tick = el("div", { className: "tick" }, [el("span", { text: timed ? fmtMs(x) : String(Math.round(x)) })]);
        tick.style.left = ((x - view.from) / w * 100).toFixed(3) + "%";
        ticks.appendChild(tick);
      }
      status.textContent = view.from === 0 && view.to === span ? "" : "showing " + (timed ? fmtMs(view.from) + "–" + fmtMs(view.to) : "steps " + Math.round(view.from) + "–" + Math.round(view.to));
    }
    function drawRow(v) {
      var i = visible[v], r = t.rows[i], end = r.end == null ? t.end : r.end;
      var name = el("div", { className: "name" + (r.error ? " failure" : "") });
      name.style.paddingLeft = (r.level * 14) + "px";
      if (groups[i] && groups[i].length) {
        var toggle = el("button", { type: "button", className: "fold-toggle", tabindex: "-1", "aria-expanded": String(!folded[i]), "aria-label": (folded[i] ? "unfold" : "fold") + " iteration " + r.iteration, text: folded[i] ? "▸" : "▾" });
        toggle.addEventListener("click", function (ev) { ev.stopPropagation(); fold(i, !folded[i]); });
        name.appendChild(toggle);
      }
      name.appendChild(el("span", { text: r.label, title: r.label }));
      var track = el("div", { className: "track" });
      if (r.waitFrom != null) {
        var w = el("div", { className: "bar wait", title: "waiting " + fmtMs(r.start - r.waitFrom) + " (hooks, approval)" });
        place(w, r.waitFrom - t.start, r.start - t.start, view);
        track.appendChild(w);
      }
      var info = [r.label, timed ? fmtMs(end - r.start) + (r.end == null ? " (running)" : "") : "", tokens(r.usage), r.usage && r.usage.costUsd != null ? fmtCost(r.usage.costUsd) : "", r.error ? "failed" : "", r.detail || ""].filter(Boolean).join("\n");
      var bar = el("div", { className: "bar " + r.kind + (r.error ? " error" : ""), title: info });
      place(bar, r.start - t.start, end - t.start, view);
      track.appendChild(bar);
      r.marks.forEach(function (m) {
        var mk = el("div", { className: "mark " + m.kind, title: m.label, "data-mark": m.kind });
        place(mk, m.at - t.start, m.at - t.start, view);
        mk.style.width = "";
        track.appendChild(mk);
      });
      var row = el("div", { className: "row" + (r.error ? " failed" : ""), "data-kind": r.kind, "data-level": String(r.level), "data-id": r.id, "aria-label": info.split("\n").slice(0, 5).join(", ") + (groups[i] && groups[i].length ? (folded[i] ? ", folded" : ", unfolded") : "") }, [name, track]);
      row.addEventListener("click", function () { if (!dragged) openRow(key, t, r, row); });
      row.addEventListener("keydown", function (ev) {
        if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); openRow(key, t, r, row); }
        else if (ev.key === "ArrowLeft" && groups[i] && groups[i].length) { ev.preventDefault(); fold(i, true); }
        else if (ev.key === "ArrowRight" && groups[i] && groups[i].length) { ev.preventDefault(); fold(i, false); }
      });
      return row;
    }
    function fold(i, on) { folded[i] = on; computeVisible(); rows.focus = Math.max(0, visible.indexOf(i)); rows.redraw(visible.length); }
    function redraw() { drawAxis(); rows.redraw(); }
    // zoom with Ctrl+wheel where the pointer is, pan with a sideways wheel or by dragging
    var dragged = false;
    box.addEventListener("wheel", function (ev) {
      var track = box.querySelector(".track");
      if (!track) return;
      var rect = track.getBoundingClientRect(), at = view.from + (ev.clientX - rect.left) / rect.width * (view.to - view.from);
      if (ev.ctrlKey || ev.metaKey) { ev.preventDefault(); zoom(ev.deltaY > 0 ? 1.25 : 0.8, Math.max(0, Math.min(span, at))); }
      else if (Math.abs(ev.deltaX) > Math.abs(ev.deltaY) || ev.shiftKey) { ev.preventDefault(); pan((ev.deltaX || ev.deltaY) / Math.max(1, rect.width)); }
    }, { passive: false });
    box.addEventListener("pointerdown", function (ev) {
      var track = ev.target.closest && ev.target.closest(".track");
      if (!track || ev.button !== 0) return;
      var x0 = ev.clientX, from0 = view.from, width = track.getBoundingClientRect().width;
      dragged = false;
      function move(e) {
        if (Math.abs(e.clientX - x0) > 3) dragged = true;
        if (!dragged) return;
        var w = view.to - view.from, from = Math.max(0, Math.min(span - w, from0 - (e.clientX - x0) / width * w));
        view = { from: from, to: from + w }; redraw();
      }
      function up() { window.removeEventListener("pointermove", move); window.removeEventListener("pointerup", up); setTimeout(function () { dragged = false; }, 0); }
      window.addEventListener("pointermove", move); window.addEventListener("pointerup", up);
    });
    var legend = el("div", { className: "legend dim" });
    [["model", "model call"], ["tool", "tool call"], ["wait", "wait (hooks, approval)"], ["turn", "turn / sub-turn"], ["error", "failed"]].forEach(function (l) { var s = el("span", { className: "bar " + l[0] }); s.style.position = "static"; legend.appendChild(s); legend.appendChild(document.createTextNode(l[1])); });
    var left = el("div", { className: "timeline-main" }, [gantt, legend, chart(t.context)]);
    var right;
    if (!timed) right = el("div", { className: "dim", text: "No events recorded for this turn." });
    else {
      right = el("div", { className: "v-box events", id: "events", "aria-label": "events of the turn: arrows move, Enter opens" });
    }
    app.appendChild(el("div", { className: "layout" }, [left, right]));
    var rows = fixedList(box, visible.length, ROW_PX, drawRow);
    timelineKept = { id: key + "/" + turnId, span: span, folded: folded, box: box, rows: rows };
    Object.defineProperty(timelineKept, "view", { get: function () { return view; } });
    if (kept && kept.box.isConnected === false) { box.scrollTop = kept.scrollTop || 0; rows.redraw(); }
    box.addEventListener("scroll", function () { timelineKept.scrollTop = box.scrollTop; });
    if (focused !== null) rows.focusRow(Math.min(focused, visible.length - 1));
    drawAxis();
    if (timed) {
      fixedList(right, t.events.length, EVENT_PX, function (i) {
        var e = t.events[i], bad = e._tag === "Error" || (e._tag === "ToolExecEnd" && e.isError) || (e._tag === "TurnEnd" && e.status !== "completed") || e._tag === "ToolExecSkipped";
        var row = el("div", { className: "event" + (bad ? " failed" : ""), "data-tag": e._tag, "aria-label": e._tag + " " + describe(e) }, [
          el("span", { className: "num", text: "+" + fmtMs(e.at - t.start) }), el("span", { className: "tag", text: e._tag }), el("span", { className: "what", text: describe(e) })
        ]);
        row.addEventListener("click", function () { openEvent(key, t, e, row); });
        row.addEventListener("keydown", function (ev) { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); openEvent(key, t, e, row); } });
        return row;
      });
    }
    if (rowId) {
      var at = t.rows.findIndex(function (r) { return r.id === rowId; });
      if (at >= 0) {
        for (var h in groups) if (groups[h].indexOf(at) >= 0) folded[h] = false;
        computeVisible();
        rows.redraw(visible.length);
        rows.focusRow(visible.indexOf(at));
        openRow(key, t, t.rows[at], rows.node(visible.indexOf(at)));
      }
    }
  });
}
function describe(e) {
  switch (e._tag) {
    case "TurnStart": return typeof e.input === "string" ? e.input.slice(0, 120) : "(parts)";
    case "LLMRequest": return e.model + ", " + e.messageCount + " messages";
    case "LLMResponse": return e.finishReason + ", " + tokens(e.usage) + ", " + fmtMs(e.durationMs);
    case "ToolExecStart": return e.toolName + " " + e.arguments.slice(0, 120);
    case "ToolExecEnd": return e.toolName + (e.isError ? " failed" : " ok") + ", " + fmtMs(e.durationMs);
    case "ToolExecSkipped": return e.toolName + ": " + e.reason;
    case "LLMRetry": return "attempt " + e.attempt + ": " + e.reason;
    case "InterruptReceived": return e.kind + (e.hint ? ": " + e.hint : "");
    case "SubTurnSpawn": case "SubTurnEnd": return e.childTurnId + (e.status ? " " + e.status : "");
    case "TurnEnd": return e.status + ", " + e.iterations + " iterations" + (e.error ? ": " + e.error : "");
    case "Error": return e.stage + ": " + e.message;
    default: return "";
  }
}
// Input tokens per model call: one bar each, the bars sharing the chart's width whatever their number.
function chart(points) {
  var box = el("div", { className: "chart", id: "context-chart" });
  if (!points.length) return box;
  box.appendChild(el("div", { className: "dim", text: "Context size (input tokens) per model call" }));
  var NS = "http://www.w3.org/2000/svg", w = 600, h = 100, n = points.length, max = 1;
  points.forEach(function (p) { if (p.tokens > max) max = p.tokens; });
  var svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", "0 0 " + w + " " + (h + 2)); svg.setAttribute("preserveAspectRatio", "none");
  svg.setAttribute("role", "img"); svg.setAttribute("aria-label", "context size over " + n + " model calls, up to " + fmtNum(max) + " input tokens");
  var slot = w / Math.max(n, 1), bw = Math.max(0.2, slot * (n > 40 ? 0.85 : 0.7));
  points.forEach(function (p, i) {
    var bh = Math.max(1, p.tokens / max * h), r = document.createElementNS(NS, "rect");
    r.setAttribute("x", (i * slot + (slot - bw) / 2).toFixed(3)); r.setAttribute("y", (h - bh).toFixed(3)); r.setAttribute("width", bw.toFixed(3)); r.setAttribute("height", bh.toFixed(3)); r.setAttribute("class", "ctx-bar");
    var tip = document.createElementNS(NS, "title"); tip.textContent = "iteration " + p.iteration + ": " + fmtNum(p.tokens) + " tokens"; r.appendChild(tip);
    svg.appendChild(r);
  });
  box.appendChild(svg);
  return box;
}
`
