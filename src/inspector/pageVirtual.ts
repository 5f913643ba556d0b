/**
 * The part of the page's script that keeps long lists small: lists drawn virtually (only the rows
 * in view, and a few around them, are in the page; the box they scroll in has a bounded height),
 * with rows of one height (the timeline's bars, its events) or of measured heights (the
 * conversation, whose pages of 200 entries are fetched as they come into view). Rows of a list
 * are focusable one at a time (a roving tabindex): the arrows, Page Up/Down, Home and End move.
 * Functions of the page's one script (see `pageScript.ts`); no back-quotes or dollar-brace in it.
 */
export const VIRTUAL = String.raw`
function rowKeys(list, ev, page) {
  var row = ev.target.closest && ev.target.closest("[data-i]");
  if (!row) return;
  var i = Number(row.getAttribute("data-i")), to = null;
  if (ev.key === "ArrowDown") to = i + 1; else if (ev.key === "ArrowUp") to = i - 1;
  else if (ev.key === "PageDown") to = i + page; else if (ev.key === "PageUp") to = i - page;
  else if (ev.key === "Home") to = 0; else if (ev.key === "End") to = list.count - 1;
  if (to === null) return;
  ev.preventDefault();
  list.focusRow(Math.max(0, Math.min(list.count - 1, to)));
}
// count rows of height px in box (which scrolls); draw(i) makes row i.
function fixedList(box, count, height, draw) {
  var inner = el("div", { className: "v-inner" }), drawn = {}, list = { count: count, focus: 0 };
  box.appendChild(inner);
  function size() { inner.style.height = Math.max(1, list.count * height) + "px"; }
  function update() {
    var top = box.scrollTop, h = box.clientHeight || 600, keep = {};
    var from = Math.max(0, Math.floor(top / height) - 8), to = Math.min(list.count, Math.ceil((top + h) / height) + 8);
    for (var i = from; i < to; i++) {
      var node = drawn[i];
      if (!node) {
        node = draw(i);
        node.setAttribute("data-i", String(i));
        node.style.position = "absolute"; node.style.left = "0"; node.style.right = "0";
        node.style.top = (i * height) + "px"; node.style.height = height + "px";
        inner.appendChild(node);
      }
      node.tabIndex = i === list.focus ? 0 : -1;
      keep[i] = node;
    }
    for (var k in drawn) if (!keep[k]) { if (drawn[k] === document.activeElement) keep[k] = drawn[k]; else drawn[k].remove(); }
    drawn = keep;
  }
  list.redraw = function (count) {
    var had = document.activeElement && inner.contains(document.activeElement);
    for (var k in drawn) drawn[k].remove();
    drawn = {};
    if (count != null) list.count = count;
    list.focus = Math.min(list.focus, Math.max(0, list.count - 1));
    size(); update();
    if (had && drawn[list.focus]) drawn[list.focus].focus();
  };
  list.focusRow = function (i) {
    list.focus = i;
    if (i * height < box.scrollTop) box.scrollTop = i * height;
    else if ((i + 1) * height > box.scrollTop + box.clientHeight) box.scrollTop = (i + 1) * height - box.clientHeight;
    update();
    if (drawn[i]) drawn[i].focus();
  };
  list.node = function (i) { return drawn[i]; };
  box.addEventListener("scroll", update);
  box.addEventListener("keydown", function (ev) { rowKeys(list, ev, Math.max(1, Math.floor(box.clientHeight / height) - 1)); });
  box.addEventListener("focusin", function (ev) {
    var row = ev.target.closest && ev.target.closest("[data-i]");
    if (row && inner.contains(row)) { list.focus = Number(row.getAttribute("data-i")); for (var k in drawn) drawn[k].tabIndex = Number(k) === list.focus ? 0 : -1; }
  });
  size(); update();
  return list;
}
// count entries of heights measured once drawn (estimate until then) in box; draw(i) makes entry i.
function measuredList(box, count, estimate, draw) {
  var inner = el("div", { className: "v-inner" }), heights = new Float64Array(count), tops = new Float64Array(count + 1), dirty = true, drawn = {}, scheduled = false;
  heights.fill(estimate);
  box.appendChild(inner);
  var list = { count: count };
  function layout() {
    if (!dirty) return;
    for (var i = 0; i < count; i++) tops[i + 1] = tops[i] + heights[i];
    inner.style.height = Math.max(1, tops[count]) + "px";
    dirty = false;
  }
  function indexAt(y) {
    var lo = 0, hi = count;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (tops[mid + 1] <= y) lo = mid + 1; else hi = mid; }
    return lo;
  }
  var observer = typeof ResizeObserver === "undefined" ? null : new ResizeObserver(function (items) {
    // at the end of the list (scrolled to the bottom), it stays at the end
    var shift = 0, atEnd = box.scrollTop > 0 && box.scrollTop + box.clientHeight >= tops[count] - 2;
    items.forEach(function (item) {
      var node = item.target, i = Number(node.getAttribute("data-i")), h = node.offsetHeight;
      if (!node.isConnected || !(h > 0) || Math.abs(h - heights[i]) < 0.5) return;
      // entries above the top of the view keep what is in view in its place
      if (tops[i] + heights[i] <= box.scrollTop) shift += h - heights[i];
      heights[i] = h; dirty = true;
    });
    if (!dirty) return;
    layout();
    if (atEnd) box.scrollTop = tops[count];
    else if (shift) box.scrollTop += shift;
    schedule();
  });
  function schedule() { if (scheduled) return; scheduled = true; requestAnimationFrame(function () { scheduled = false; update(); }); }
  function update() {
    layout();
    var top = box.scrollTop, h = box.clientHeight || 600, keep = {};
    var from = Math.max(0, indexAt(top) - 2), to = Math.min(count, indexAt(top + h) + 3);
    for (var i = from; i < to; i++) {
      var node = drawn[i];
      if (!node) {
        node = el("div", { className: "v-item", "data-i": String(i) }, [draw(i)]);
        inner.appendChild(node);
        if (observer) observer.observe(node);
      }
      node.style.top = tops[i] + "px";
      keep[i] = node;
    }
    for (var k in drawn) if (!keep[k]) { if (drawn[k].contains(document.activeElement)) keep[k] = drawn[k]; else { if (observer) observer.unobserve(drawn[k]); drawn[k].remove(); } }
    drawn = keep;
  }
  // entries from..to drawn again (their data arrived)
  list.refresh = function (from, to) {
    for (var k in drawn) if (Number(k) >= from && Number(k) < to) { if (observer) observer.unobserve(drawn[k]); drawn[k].remove(); delete drawn[k]; }
    update();
  };
  list.scrollToIndex = function (i) {
    layout();
    box.scrollTop = tops[Math.max(0, Math.min(count - 1, i))];
    update();
    // once the entries above are measured, again
    requestAnimationFrame(function () { layout(); box.scrollTop = tops[Math.max(0, Math.min(count - 1, i))]; update(); });
  };
  box.addEventListener("scroll", schedule);
  update();
  return list;
}

var shown = null;
// A session's conversation, drawn virtually: the page of 200 entries holding offset first, the
// others as they come into view. The same session drawn again (live) keeps its place.
function renderSession(key, offset) {
  if (shown && shown.key === key && shown.offset !== offset && document.getElementById("conversation") === shown.box) {
    shown.offset = offset;
    shown.list.scrollToIndex(offset);
    return Promise.resolve();
  }
  var first = Math.floor(offset / PAGE) * PAGE, keepTop = shown && shown.key === key && shown.box.isConnected ? shown.box.scrollTop : null;
  return api("session/" + encodeURIComponent(key), { offset: first, limit: PAGE }).then(function (c) {
    clear(app);
    app.appendChild(el("h2", { text: c.sessionKey }));
    var turns = el("div", { className: "turns", id: "turns" }), seenTurns = {};
    function addTurns(list) {
      list.forEach(function (t) {
        if (seenTurns[t.id]) return;
        seenTurns[t.id] = true;
        turns.appendChild(el("a", { href: timelineHref(key, t.id), "data-source": t.source, "data-status": t.status || "", className: t.status && t.status !== "completed" && t.status !== "running" ? "failed" : "", title: t.source === "events" ? "recorded events" : "from the log (order only)" }, [(t.status === "running" ? "● " : "") + t.label]));
      });
    }
    addTurns(c.turns);
    app.appendChild(el("div", null, [el("span", { className: "dim", text: "Timelines: " }), turns]));
    app.appendChild(el("p", { className: "dim", id: "conversation-size", text: fmtNum(c.total) + " entries" }));
    var box = el("div", { id: "conversation", className: "v-box conversation", tabindex: "0", role: "region", "aria-label": "conversation, " + c.total + " entries" });
    app.appendChild(box);
    var pages = {}, loading = {}, calls = {};
    function addCalls(more) { for (var id in more || {}) { more[id].session = key; calls[id] = more[id]; } }
    pages[first / PAGE] = c.items;
    addCalls(c.calls);
    function load(p) {
      if (loading[p]) return;
      loading[p] = true;
      api("session/" + encodeURIComponent(key), { offset: p * PAGE, limit: PAGE }).then(function (more) {
        pages[p] = more.items; addCalls(more.calls); addTurns(more.turns);
        list.refresh(p * PAGE, (p + 1) * PAGE);
      }, function () { loading[p] = false; });
    }
    var list = measuredList(box, c.total, 96, function (i) {
      var p = Math.floor(i / PAGE), items = pages[p];
      if (!items) { load(p); return el("div", { className: "msg placeholder dim", text: "#" + i + " …" }); }
      var n = items[i - p * PAGE];
      return n ? entry(n.entry, n.index, calls) : el("div");
    });
    shown = { key: key, offset: offset, box: box, list: list };
    if (keepTop !== null) { box.scrollTop = keepTop; list.refresh(0, 0); }
    else if (offset > 0) list.scrollToIndex(offset);
  });
}
`
