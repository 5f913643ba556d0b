/**
 * The style of the page's readable content, virtual lists, timeline and details panel (added to
 * the page's style sheet in `page.ts`, so it is allowed by the same hash). Colours come from the
 * page's variables where it has them, so a theme that sets those restyles these too.
 */
export const VIEW_STYLE = `
.v-box{position:relative;overflow:auto;border:1px solid var(--line);border-radius:6px}.v-inner{position:relative}
.conversation{max-height:calc(100vh - 190px);max-width:1000px;padding:0 6px}.v-item{position:absolute;left:6px;right:6px;padding:4px 0}.v-item>.msg{margin:0}
.msg .who a,.call-head a{margin-left:2px;text-decoration:underline}.placeholder{min-height:60px}
.fold-bar{display:flex;gap:8px;margin:2px 0}.folded{max-height:none}.unfolded{max-height:70vh;overflow:auto;border-left:2px solid var(--line);padding-left:6px}
button.expander,button.copy{font-size:12px;padding:0 8px;border:1px solid var(--line);border-radius:4px;background:var(--soft);color:var(--fg);cursor:pointer}
pre.mono,pre.code,pre.diff{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:pre-wrap;word-break:break-word;background:var(--soft);padding:6px 8px;border-radius:4px;margin:4px 0;overflow:auto}
.md p{margin:4px 0;white-space:pre-wrap;word-break:break-word}.md code{font:12px ui-monospace,Menlo,Consolas,monospace;background:var(--soft);padding:0 3px;border-radius:3px}
.md ul,.md ol{margin:4px 0;padding-left:22px}.md blockquote{margin:4px 0;padding-left:10px;border-left:3px solid var(--line);color:var(--dim)}.md .md-h{margin:8px 0 4px}
.md a{text-decoration:underline}.md-table{overflow:auto}.md table{width:auto}.md th,.md td{border:1px solid var(--line)}
.tok-k{color:#8250df}.tok-s{color:#0a6b2d}.tok-c{color:#57606a;font-style:italic}.tok-n{color:#0550ae}.tok-key{color:#953800}
.d-add{background:#dafbe1;display:block}.d-del{background:#ffebe9;display:block}.d-ctx{display:block;color:var(--dim)}
.call{border-left:3px solid var(--tool);padding-left:8px;margin:6px 0}.call-head{font-size:13px}.subturn{margin:6px 0 6px 12px;border-left:2px dashed var(--turn);padding-left:8px}
.turns{max-height:5.5em;overflow:auto}.turns a.failed{border-color:var(--err);color:var(--err)}
.toolbar{display:flex;gap:4px;align-items:center;flex-wrap:wrap;margin-bottom:4px}.toolbar button{padding:1px 8px}
.gantt-rows{max-height:60vh;border:0}.gantt .row{cursor:pointer;border-radius:3px}.gantt .row:hover,.gantt .row:focus{background:var(--soft);outline:2px solid var(--model);outline-offset:-2px}
.row .name{display:flex;align-items:center;gap:2px}.row .name span{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}.row.failed .name,.event.failed{color:var(--err)}
.fold-toggle{border:0;background:none;padding:0 2px;cursor:pointer;color:var(--fg);font-size:12px}
.track{overflow:hidden}.axis{min-height:18px;cursor:default}.ticks{background:none;height:18px;border-bottom:1px solid var(--line)}
.tick{position:absolute;top:0;height:18px;border-left:1px solid var(--line);font-size:10px;color:var(--dim);padding-left:2px;white-space:nowrap}
.events{max-height:70vh;font-size:12px}.event{display:grid;grid-template-columns:70px 120px 1fr;gap:6px;align-items:center;padding:0 6px;cursor:pointer;white-space:nowrap;overflow:hidden}
.event span{overflow:hidden;text-overflow:ellipsis}.event:hover,.event:focus{background:var(--soft);outline:2px solid var(--model);outline-offset:-2px}
.chart svg{width:100%;max-width:600px;height:110px;display:block}.ctx-bar{fill:var(--model)}
#details{position:fixed;top:0;right:0;bottom:0;width:min(680px,100vw);background:var(--bg);border-left:1px solid var(--line);box-shadow:-4px 0 16px rgba(0,0,0,.15);overflow:auto;padding:0 14px 14px;z-index:10}
.details-head{position:sticky;top:0;background:var(--bg);display:flex;justify-content:space-between;align-items:center;border-bottom:1px solid var(--line)}
.details-head h2{font-size:16px;margin:10px 0;overflow:hidden;text-overflow:ellipsis}.close{font-size:18px;border:0;background:none;cursor:pointer;color:var(--fg)}
.detail h3{font-size:14px;margin:12px 0 4px;display:flex;gap:8px;align-items:center}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:8px 0}.facts dt{color:var(--dim)}.facts dd{margin:0}.facts dd.failure{color:var(--err)}
@media (max-width:700px){.layout{grid-template-columns:1fr}.row{grid-template-columns:110px 1fr}.conversation{max-height:calc(100vh - 230px)}.event{grid-template-columns:60px 100px 1fr}}
`
