/**
 * The part of the page's script that makes session content readable: Markdown drawn as elements
 * (never as HTML: every piece of text is a text node, links only to http, https and mailto), code
 * highlighted, tool output in a fixed font, arguments pretty-printed, edits as diffs, long text
 * folded behind an expander (a 5 MB reply puts its first lines in the page, the rest only when
 * asked for, and then in a box that scrolls), copy buttons, and the conversation's entries with
 * each tool result paired with its call. Functions of the page's one script (see `pageScript.ts`).
 * The text avoids back-quotes and dollar-brace, since it sits in a template literal.
 */
export const CONTENT = String.raw`
var FOLD_CHARS = 3000, FOLD_LINES = 30, PLAIN_ABOVE = 200000;
function lineCount(text) { var n = 1, i = -1; while ((i = text.indexOf("\n", i + 1)) >= 0 && n <= FOLD_LINES) n++; return n; }
function foldPoint(text) {
  var cut = Math.min(text.length, FOLD_CHARS), i = -1, lines = 0;
  while ((i = text.indexOf("\n", i + 1)) >= 0 && i < cut) { if (++lines >= FOLD_LINES) return i; }
  return cut;
}
function fmtSize(n) { return n < 1024 ? n + " B" : n < 1048576 ? (n / 1024).toFixed(1) + " KB" : (n / 1048576).toFixed(1) + " MB"; }
// Long text folded: its first lines drawn, the rest behind a button; unfolded, very long text is
// drawn plain in a box of its own that scrolls, so the page's height stays bounded.
function folded(text, draw, className) {
  text = text == null ? "" : String(text);
  var box = el("div", { className: "fold " + (className || "") });
  if (text.length <= FOLD_CHARS && lineCount(text) <= FOLD_LINES) { box.appendChild(draw(text)); return box; }
  var cut = foldPoint(text);
  var more = el("button", { type: "button", className: "expander", "aria-expanded": "false", text: "Show all (" + fmtSize(text.length) + ", " + fmtNum(text.split("\n").length) + " lines)" });
  var body = el("div", { className: "folded" }, [draw(text.slice(0, cut) + " …")]);
  more.addEventListener("click", function () {
    var open = more.getAttribute("aria-expanded") === "true";
    clear(body);
    if (open) { body.className = "folded"; body.appendChild(draw(text.slice(0, cut) + " …")); more.textContent = "Show all (" + fmtSize(text.length) + ")"; }
    else { body.className = "unfolded"; body.appendChild(text.length > PLAIN_ABOVE ? el("pre", { className: "mono", text: text }) : draw(text)); more.textContent = "Fold"; }
    more.setAttribute("aria-expanded", String(!open));
  });
  box.appendChild(body);
  box.appendChild(el("div", { className: "fold-bar" }, [more, copyButton(function () { return text; })]));
  return box;
}
function copyButton(get, label) {
  var b = el("button", { type: "button", className: "copy", text: label || "Copy", title: "copy to the clipboard" });
  b.addEventListener("click", function (ev) {
    ev.stopPropagation();
    var text = "", done = function () { b.textContent = "Copied"; b.setAttribute("data-copied", "1"); setTimeout(function () { b.textContent = label || "Copy"; }, 1500); };
    var fallback = function () {
      var area = el("textarea", { "aria-hidden": "true" }); area.value = text; area.style.position = "fixed"; area.style.opacity = "0";
      document.body.appendChild(area); area.select();
      try { document.execCommand("copy"); done(); } catch (e) { b.textContent = "Copy failed"; }
      area.remove();
    };
    // what to copy may have to be fetched first (a model call's whole request)
    Promise.resolve(get()).then(function (got) {
      text = String(got);
      if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(text).then(done, fallback); else fallback();
    }, function () { b.textContent = "Copy failed"; });
  });
  return b;
}
function mono(text) { return el("pre", { className: "mono", text: text }); }

var KEYWORDS = /^(?:abstract|and|as|async|await|break|case|catch|class|const|continue|def|default|defer|del|do|elif|else|enum|except|export|extends|false|False|fi|final|finally|fn|for|from|func|function|go|if|impl|import|in|interface|is|let|match|mod|module|mut|new|nil|None|not|null|or|package|pass|private|protected|pub|public|raise|return|select|self|static|struct|super|switch|then|this|throw|trait|true|True|try|type|typeof|undefined|use|var|void|while|with|yield)$/;
var CODE_TOKEN = /(\/\/[^\n]*|\/\*[\s\S]*?\*\/|#[^\n]*|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|\x60(?:[^\x60\\]|\\.)*\x60|\b\d[\d_.xXa-fA-F]*\b|\b[A-Za-z_][\w]*\b)/g;
// Code with its comments, strings, numbers and keywords in spans of their own (text nodes only).
function highlight(code, lang) {
  var pre = el("pre", { className: "code", "data-lang": lang || "" }), out = el("code"), last = 0, m;
  var hashComments = /^(py|python|sh|bash|shell|zsh|rb|ruby|yaml|yml|toml|r|perl|make)$/i.test(lang || "");
  if (code.length > 100000) { out.textContent = code; pre.appendChild(out); return pre; }
  CODE_TOKEN.lastIndex = 0;
  while ((m = CODE_TOKEN.exec(code))) {
    var t = m[0], kind = null;
    if (t.charAt(0) === "#") { if (!hashComments) { CODE_TOKEN.lastIndex = m.index + 1; continue; } kind = "c"; }
    else if (t.indexOf("//") === 0 || t.indexOf("/*") === 0) kind = "c";
    else if (/^["'\x60]/.test(t)) kind = /^"/.test(t) && /^\s*:/.test(code.slice(m.index + t.length, m.index + t.length + 3)) ? "key" : "s";
    else if (/^\d/.test(t)) kind = "n";
    else if (KEYWORDS.test(t)) kind = "k";
    if (!kind) continue;
    if (m.index > last) out.appendChild(document.createTextNode(code.slice(last, m.index)));
    out.appendChild(el("span", { className: "tok-" + kind, text: t }));
    last = m.index + t.length;
  }
  if (last < code.length) out.appendChild(document.createTextNode(code.slice(last)));
  pre.appendChild(out);
  return pre;
}
function safeHref(url) { return /^(https?:|mailto:)/i.test(url) ? url : null; }
// Inline Markdown: code, bold, italics, links and bare URLs; everything else as text.
function inline(text, into) {
  var re = /(\x60+)([\s\S]*?[^\x60])\1(?!\x60)|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|\b_([^_\s][^_]*)_\b|\[([^\]]+)\]\(([^)\s]+)\)|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/g, last = 0, m;
  while ((m = re.exec(text))) {
    if (m.index > last) into.appendChild(document.createTextNode(text.slice(last, m.index)));
    if (m[2] != null) into.appendChild(el("code", { text: m[2] }));
    else if (m[3] != null || m[4] != null) into.appendChild(inline(m[3] || m[4], el("strong")));
    else if (m[5] != null || m[6] != null) into.appendChild(inline(m[5] || m[6], el("em")));
    else {
      var label = m[7] != null ? m[7] : m[9], href = safeHref(m[7] != null ? m[8] : m[9]);
      into.appendChild(href ? el("a", { href: href, text: label, target: "_blank", rel: "noopener noreferrer" }) : document.createTextNode(m[0]));
    }
    last = m.index + m[0].length;
  }
  if (last < text.length) into.appendChild(document.createTextNode(text.slice(last)));
  return into;
}
// Block Markdown: headings, fenced code, quotes, lists, tables, rules and paragraphs. Raw HTML in
// the text stays text.
function markdown(text) {
  var box = el("div", { className: "md" }), lines = String(text).split("\n"), i = 0, para = [];
  function flush() { if (para.length) { box.appendChild(inline(para.join("\n"), el("p"))); para = []; } }
  while (i < lines.length) {
    var line = lines[i], m;
    if ((m = /^\s*(\x60{3,}|~{3,})\s*([\w+#.-]*)/.exec(line))) {
      flush();
      var fence = m[1], lang = m[2], code = [];
      i++;
      while (i < lines.length && lines[i].trim().indexOf(fence) !== 0) code.push(lines[i++]);
      i++;
      box.appendChild(highlight(code.join("\n"), lang));
      continue;
    }
    if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) { flush(); box.appendChild(inline(m[2], el("h" + Math.min(6, m[1].length + 2), { className: "md-h" }))); i++; continue; }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) { flush(); box.appendChild(el("hr")); i++; continue; }
    if (/^\s*>/.test(line)) {
      flush();
      var quoted = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) quoted.push(lines[i++].replace(/^\s*>\s?/, ""));
      box.appendChild(el("blockquote", null, [markdown(quoted.join("\n"))]));
      continue;
    }
    if (/^\s*([-*+]|\d+[.)])\s+/.test(line)) {
      flush();
      var ordered = /^\s*\d/.test(line), list = el(ordered ? "ol" : "ul");
      while (i < lines.length && /^\s*([-*+]|\d+[.)])\s+/.test(lines[i])) {
        var item = lines[i++].replace(/^\s*([-*+]|\d+[.)])\s+/, "");
        while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !/^\s*([-*+]|\d+[.)])\s+/.test(lines[i])) item += " " + lines[i++].trim();
        var task = /^\[([ xX])\]\s+/.exec(item);
        list.appendChild(inline(task ? (task[1] === " " ? "☐ " : "☑ ") + item.slice(task[0].length) : item, el("li")));
      }
      box.appendChild(list);
      continue;
    }
    if (/^\s*\|.*\|\s*$/.test(line) && i + 1 < lines.length && /^\s*\|?\s*:?-{2,}/.test(lines[i + 1])) {
      flush();
      var cells = function (l) { return l.trim().replace(/^\||\|$/g, "").split("|").map(function (c) { return c.trim(); }); };
      var head = el("tr", null, cells(line).map(function (c) { return inline(c, el("th")); })), rows = [];
      i += 2;
      while (i < lines.length && /^\s*\|.*\|\s*$/.test(lines[i])) rows.push(el("tr", null, cells(lines[i++]).map(function (c) { return inline(c, el("td")); })));
      box.appendChild(el("div", { className: "md-table" }, [el("table", null, [el("thead", null, [head]), el("tbody", null, rows)])]));
      continue;
    }
    if (line.trim() === "") { flush(); i++; continue; }
    para.push(line); i++;
  }
  flush();
  return box;
}
function pretty(json) {
  try { return JSON.stringify(JSON.parse(json), null, 2); } catch (e) { return json; }
}
// A line diff of two texts (longest common subsequence; texts too long for it are shown whole,
// removed then added).
function diffLines(before, after) {
  var a = before.split("\n"), b = after.split("\n"), out = [];
  if (a.length * b.length > 4000000) { a.forEach(function (l) { out.push(["del", l]); }); b.forEach(function (l) { out.push(["add", l]); }); return out; }
  var n = a.length, m = b.length, table = [];
  for (var i = 0; i <= n; i++) table.push(new Uint32Array(m + 1));
  for (i = n - 1; i >= 0; i--) for (var j = m - 1; j >= 0; j--) table[i][j] = a[i] === b[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
  i = 0; j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) { out.push(["ctx", a[i]]); i++; j++; }
    else if (i < n && (j >= m || table[i + 1][j] >= table[i][j + 1])) out.push(["del", a[i++]]);
    else out.push(["add", b[j++]]);
  }
  return out;
}
function diffView(path, before, after) {
  var pre = el("pre", { className: "diff", "aria-label": "changes to " + path });
  diffLines(before, after).forEach(function (d) { pre.appendChild(el("span", { className: "d-" + d[0], text: (d[0] === "add" ? "+ " : d[0] === "del" ? "- " : "  ") + d[1] + "\n" })); });
  return el("div", null, [el("div", { className: "dim", text: "edit of " + path }), folded("", function () { return pre; })]);
}
// A tool call's arguments: an edit as a diff, a written file as code, anything else pretty-printed.
function argumentsView(name, args) {
  var parsed = null;
  try { parsed = JSON.parse(args); } catch (e) { /* shown as given */ }
  if (parsed && typeof parsed.old_text === "string" && typeof parsed.new_text === "string") return diffView(parsed.path || "", parsed.old_text, parsed.new_text);
  if (parsed && name === "write_file" && typeof parsed.content === "string") {
    var ext = /\.(\w+)$/.exec(parsed.path || "");
    return el("div", null, [el("div", { className: "dim", text: "new content of " + (parsed.path || "") }), folded(parsed.content, function (t) { return highlight(t, ext ? ext[1] : ""); })]);
  }
  return folded(pretty(args), function (t) { return highlight(t, "json"); });
}
function callLink(info) {
  return info ? el("a", { href: timelineHref(info.session, info.turnId) + "/" + encodeURIComponent(info.rowId), className: "bar-link", text: "its bar" }) : null;
}
function entryHref(info, index) { return sessionHref(info.session) + "/" + index; }
function toolCallView(c, info) {
  var head = el("div", { className: "call-head" }, [el("b", { text: "→ " + c.name }), el("span", { className: "dim", text: " call " + c.id })]);
  if (info && info.resultIndex != null) head.appendChild(el("a", { href: entryHref(info, info.resultIndex), className: "result-link", text: " result #" + info.resultIndex }));
  if (info && info.durationMs != null) head.appendChild(el("span", { className: "dim", text: " · " + fmtMs(info.durationMs) }));
  if (info) { head.appendChild(document.createTextNode(" · ")); head.appendChild(callLink(info)); }
  var box = el("div", { className: "call", "data-call": c.id }, [head, argumentsView(c.name, c.arguments)]);
  if (info && info.subTurnId) box.appendChild(subTurnView(info.session, info.subTurnId));
  return box;
}
// A sub-turn's conversation, from the events of its own timeline, drawn when opened.
function subTurnView(key, turnId) {
  var box = el("details", { className: "subturn", "data-subturn": turnId }, [el("summary", { text: "sub-turn conversation" })]);
  box.addEventListener("toggle", function () {
    if (!box.open || box.getAttribute("data-loaded")) return;
    box.setAttribute("data-loaded", "1");
    api("timeline/" + encodeURIComponent(key) + "/" + encodeURIComponent(turnId)).then(function (t) {
      if (!t) { box.appendChild(el("div", { className: "dim", text: "Its events were not recorded." })); return; }
      eventMessages(t.events.filter(function (e) { return e.turnId === turnId; })).forEach(function (m, i) { box.appendChild(entry(m, i, {})); });
    }, function (e) { box.appendChild(el("div", { className: "failure", text: e.message })); });
  });
  return box;
}
// The messages of a turn, as its events tell them.
function eventMessages(events) {
  var out = [];
  events.forEach(function (e) {
    if (e._tag === "TurnStart") out.push({ role: "user", content: e.input });
    else if (e._tag === "LLMResponse") out.push({ role: "assistant", content: e.content, toolCalls: e.toolCalls });
    else if (e._tag === "ToolExecEnd") out.push({ role: "tool", toolCallId: e.toolCallId, toolName: e.toolName, content: e.result, isError: e.isError });
  });
  return out;
}
function parts(content, draw) {
  if (typeof content === "string") return [folded(content, draw)];
  return content.map(function (p) {
    if (p.type === "text") return folded(p.text, draw);
    var data = p.data, type = p.mediaType;
    var m = p.url && /^data:([^;,]+);base64,([A-Za-z0-9+/=]*)$/.exec(p.url);
    if (m) { type = m[1]; data = m[2]; }
    if (data != null && IMAGE_TYPES.indexOf(type) >= 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(data)) return el("img", { className: "part", src: "data:" + type + ";base64," + data, alt: "image " + type });
    return el("div", { className: "dim", text: "[image " + (p.url || type || "") + "]" });
  });
}
// One entry of the log. calls: the tool calls' pairing (calls.ts), with the session's key.
function entry(e, index, calls) {
  calls = calls || {};
  var box = el("div", { className: "msg " + e.role + (e.isError ? " error" : ""), "data-index": String(index), "data-role": e.role });
  var info = e.role === "tool" ? calls[e.toolCallId] : null;
  var who = e.role === "tool" ? "tool result · " + e.toolName + (e.isError ? " · error" : "") : e.role;
  var head = el("div", { className: "who" }, ["#" + index + " " + who]);
  if (e.role === "tool") {
    head.appendChild(el("span", { text: " · call " + e.toolCallId }));
    if (info && info.callIndex != null) head.appendChild(el("a", { href: entryHref(info, info.callIndex), className: "call-link", text: " · asked in #" + info.callIndex }));
    if (info && info.durationMs != null) head.appendChild(el("span", { text: " · " + fmtMs(info.durationMs) }));
    if (info) { head.appendChild(document.createTextNode(" · ")); head.appendChild(callLink(info)); }
  }
  box.appendChild(head);
  if (e.role === "system") box.appendChild(el("details", null, [el("summary", { text: "system prompt" }), folded(e.content, markdown)]));
  else if (e.role === "user") parts(e.content, markdown).forEach(function (n) { box.appendChild(n); });
  else if (e.role === "tool") parts(e.content, mono).forEach(function (n) { box.appendChild(n); });
  else if (e.role === "assistant") {
    if (e.reasoning) box.appendChild(el("details", { className: "reasoning" }, [el("summary", { text: "reasoning" }), folded(e.reasoning, markdown)]));
    if (e.content) box.appendChild(folded(e.content + (e.partial ? " [cut short]" : ""), markdown));
    (e.toolCalls || []).forEach(function (c) { box.appendChild(toolCallView(c, calls[c.id])); });
    if (e.providerBlocks && e.providerBlocks.length) box.appendChild(el("details", null, [el("summary", { text: "provider blocks (" + e.providerBlocks.length + ")" }), folded(JSON.stringify(e.providerBlocks, null, 2), mono)]));
  } else if (e.role === "compaction") {
    box.appendChild(el("div", { text: "Compaction (" + e.reason + "): the context now starts at message " + e.cut + " of the view" }));
    if (e.summary != null) box.appendChild(el("details", null, [el("summary", { text: "summary" }), folded(e.summary, markdown)]));
  } else if (e.role === "meta") box.appendChild(el("div", { className: "dim", text: "workspace: " + (e.workspace || "-") }));
  else if (e.role === "outcome") box.appendChild(el("div", { className: e.status === "completed" ? "dim" : "failure", text: "Turn " + e.status + ": " + e.iterations + " iterations · " + tokens(e.usage) + (e.usage.costUsd != null ? " · " + fmtCost(e.usage.costUsd) : "") + (e.error ? " · " + e.error._tag + ": " + e.error.message : "") }));
  else if (e.role === "rewind") box.appendChild(el("div", { text: "Rewound: the conversation continues from message " + e.cut + " of the view; the messages above are an abandoned branch" }));
  return box;
}
`
