/**
 * The inspector's views in a real browser (headless Chromium from the distribution, driven by
 * playwright-core): details on click and by keyboard, folding and virtual lists, readable content
 * (Markdown, highlighted code, diffs, tool results paired with their calls, a sub-turn's
 * conversation), and the timeline (axis, zoom, pan, folding, the context chart of a 500-call
 * turn); an axe-core scan of each view, and screenshots at 1280×800 and 390×844 saved under
 * `.tmp/inspector-screenshots/`. The sessions come from real turns of a scripted model, and a
 * 10,000-message session is put in the store as it is. Skipped, saying so, without Chromium.
 */
import * as fs from "node:fs"
import { createServer } from "node:http"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Exit, Layer, Schema, Scope } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import type { Browser, BrowserContextOptions, Page } from "playwright-core"
import { chromiumPresent, launchChromium } from "../support/chromium.ts"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AgentLoop, AgentLoopLive, Inspector, Message, Scripted, SessionStore, SessionStoreMemory, subagent, Tool, ToolError, ToolRegistryLive } from "effect-agent-loop"
import type { ProviderTypes } from "effect-agent-loop"
import { root } from "../support/cliProcess.ts"

const present = chromiumPresent("inspector view tests")

const WAIT = { timeout: 30_000 }
const SHOTS = path.join(root, ".tmp", "inspector-screenshots")
const AXE = createRequire(import.meta.url).resolve("axe-core/axe.min.js")

/** A reply of 5 MB. */
const HUGE = Array.from({ length: 80_000 }, (_, i) => `line ${i} ${"x".repeat(56)}`).join("\n")
const MARKDOWN = [
  "## Plan",
  "Here is **the fix** and a [link](https://example.com/docs) and a [bad one](javascript:alert(1)).",
  "",
  "- first item",
  "- second item with `inline code`",
  "",
  "```ts",
  "const answer: number = 42 // the answer",
  "```",
  "",
  "<b>raw</b><img src=x onerror=\"window.pwned = 1\">"
].join("\n")
const LOOP_CALLS = 499

/** What the tests read of the page's globals (the project's types have no DOM). */
interface Dom {
  readonly document: {
    readonly activeElement: { getAttribute(name: string): string | null; closest(selector: string): unknown } | null
    readonly documentElement: { readonly scrollHeight: number }
  }
  readonly navigator: { readonly clipboard: { readText(): Promise<string> } }
  getComputedStyle(node: unknown): { readonly fontFamily: string }
}

const script = (request: ProviderTypes.ProviderRequest): Scripted.ScriptedResponse => {
  const first = Message.textOf(request.messages.find((m) => m.role === "user")?.content ?? "")
  const last = request.messages.at(-1)!
  const usage = { inputTokens: 100 * request.messages.length, outputTokens: 7, costUsd: 0.001 }
  const text = last.role === "user" ? Message.textOf(last.content) : ""
  if (first === "loop please" && last.role !== "user") {
    const done = request.messages.filter((m) => m.role === "tool").length
    return done < LOOP_CALLS ? { toolCalls: [{ id: `step-${done}`, name: "step", arguments: { n: done, note: "next" } }], usage } : { content: "looped", usage }
  }
  if (last.role === "tool") return { content: `finished after ${last.toolName}`, usage }
  if (text === "loop please") return { toolCalls: [{ id: "step-start", name: "step", arguments: { n: -1, note: "first" } }], usage }
  if (text === "markdown please") return { content: MARKDOWN, usage }
  if (text === "long please") return { content: HUGE, usage: { inputTokens: 1_000, outputTokens: 1_300_000, costUsd: 2.05 } }
  if (text === "edit please") return { toolCalls: [{ id: "call-edit", name: "edit", arguments: { path: "a.ts", old_text: "const a = 1\nconst b = 2", new_text: "const a = 1\nconst b = 3" } }], usage }
  if (text === "fail please") return { toolCalls: [{ id: "call-fail", name: "fail", arguments: { why: "testing" } }], usage }
  if (text === "delegate please") return { toolCalls: [{ id: "call-sub", name: "subagent", arguments: { task: "count the files" } }], usage }
  if (text === "count the files") return { content: "There are 3 files.", usage }
  return { content: `You said: ${text}`, usage }
}

const tools = [
  Tool.make({ name: "step", description: "One step", parameters: Schema.Struct({ n: Schema.Number, note: Schema.String }), readOnly: true, execute: ({ n }) => Effect.succeed(`step ${n} done`) }),
  Tool.make({ name: "edit", description: "Edits a file", parameters: Schema.Struct({ path: Schema.String, old_text: Schema.String, new_text: Schema.String }), readOnly: true, execute: () => Effect.succeed("edited a.ts") }),
  Tool.make({ name: "fail", description: "Always fails", parameters: Schema.Struct({ why: Schema.String }), readOnly: true, execute: () => Effect.fail(new ToolError({ message: "the disk is full" })) }),
  subagent
]

const BIG = Array.from({ length: 10_000 }, (_, i) => i % 2 === 0 ? Message.user(`Question ${i}`) : Message.assistant(`Answer ${i}: ${"lorem ipsum ".repeat(i % 7 * 10)}`))

let browser: Browser
let origin = ""
let url = ""
let close: () => Promise<void> = async () => {}
let exported = ""

describe.skipIf(!present)("inspector views in Chromium", { timeout: 180_000 }, () => {
  beforeAll(async () => {
    const token = Inspector.makeToken()
    const loop = AgentLoopLive.layer({ model: "test-model", maxIterations: 600 }).pipe(
      Layer.provideMerge(Layer.mergeAll(Scripted.layer(script), ToolRegistryLive.layer(tools), SessionStoreMemory.layer({ big: BIG })))
    )
    const server = HttpRouter.serve(Inspector.layer({ token }), { disableLogger: true, disableListenLog: true }).pipe(
      Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" }))
    )
    const scope = Effect.runSync(Scope.make())
    const context = await Effect.runPromise(Layer.buildWithScope(Layer.provideMerge(server, loop), scope))
    origin = HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address)
    url = Inspector.url(origin, token)
    const run = (key: string, input: string) => Effect.runPromise(Effect.provide(Effect.gen(function*() {
      const loop = yield* AgentLoop
      return yield* loop.turn(key, input)
    }), context))
    for (const [key, input] of [["md", "markdown please"], ["long", "long please"], ["edit", "edit please"], ["fail", "fail please"], ["sub", "delegate please"], ["loop", "loop please"]] as const) {
      await run(key, input)
    }
    close = () => Effect.runPromise(Scope.close(scope, Exit.void))
    // the edit session as an exported file (its log alone: timelines in order only)
    const editLog = await Effect.runPromise(Effect.provide(Effect.gen(function*() {
      const store = yield* SessionStore
      return yield* store.log("edit")
    }), context))
    exported = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "inspector-views-")), "edit.html")
    fs.writeFileSync(exported, Inspector.exportHtml("edit", editLog, { scrub: (text) => text }), { mode: 0o600 })
    browser = await launchChromium()
    fs.mkdirSync(SHOTS, { recursive: true })
  }, 180_000)

  afterAll(async () => {
    await browser?.close()
    await close()
    if (exported !== "") fs.rmSync(path.dirname(exported), { recursive: true, force: true })
  })

  const open = async (hash: string, options: BrowserContextOptions = {}) => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...options })
    const page = await context.newPage()
    const errors: Array<string> = []
    page.on("pageerror", (error) => errors.push(error.message))
    page.on("console", (message) => {
      // the browser asks for /favicon.ico by itself (the inspector has none)
      if (message.type() === "error" && !message.location().url.endsWith("/favicon.ico")) errors.push(`${message.text()} ${message.location().url}`)
    })
    await page.goto(`${url}${hash}`)
    return { page, errors, close: () => context.close() }
  }
  const timeline = async (page: Page, key: string) => {
    await page.goto(`${origin}/#/s/${key}`)
    await page.click('#turns a[data-source="events"]', WAIT)
    await page.waitForSelector("#gantt-rows .row", WAIT)
  }

  it("a 500-call turn: bars and events drawn virtually, a time axis, zoom, pan and folding, and a context chart with a bar for every call", async () => {
    const { page, errors, close } = await open("")
    try {
      await timeline(page, "loop")
      expect(await page.locator("#gantt-rows .row").count()).toBeLessThan(80)
      expect(await page.locator("#events .event").count()).toBeLessThan(100)
      const widths = await page.locator("#context-chart rect").evaluateAll((rects) => rects.map((r) => Number(r.getAttribute("width"))))
      expect(widths.length).toBe(LOOP_CALLS + 1)
      expect(widths.every((w) => w > 0)).toBe(true)
      expect(await page.locator("#gantt .tick").count()).toBeGreaterThanOrEqual(2)
      const ticks = () => page.locator("#gantt .tick").allTextContents()
      const before = await ticks()
      await page.click('button[aria-label="zoom in"]')
      await page.click('button[aria-label="zoom in"]')
      expect(await page.locator(".zoom-status").textContent()).toContain("showing")
      const zoomed = await ticks()
      expect(zoomed).not.toEqual(before)
      await page.click('button[aria-label="pan right"]')
      expect(await ticks()).not.toEqual(zoomed)
      await page.click('button[aria-label="Fit: show the whole turn"]')
      const height = () => page.locator("#gantt-rows .v-inner").evaluate((n) => (n as unknown as { offsetHeight: number }).offsetHeight)
      const unfolded = await height()
      await page.click('button[aria-label="Fold all iterations"]')
      expect(await height()).toBeLessThan(unfolded * 0.7)
      await page.click('button[aria-label="Unfold all iterations"]')
      expect(await height()).toBe(unfolded)
      // the keyboard: a row folds with Left, unfolds with Right, the arrows move
      const model = page.locator('#gantt-rows .row[data-kind="model"]').first()
      await model.focus()
      await page.keyboard.press("ArrowLeft")
      expect(await height()).toBeLessThan(unfolded)
      await page.keyboard.press("ArrowRight")
      expect(await height()).toBe(unfolded)
      await page.keyboard.press("ArrowDown")
      expect(await page.evaluate(() => (globalThis as unknown as Dom).document.activeElement?.getAttribute("data-kind"))).toBe("tool")
      // drawn again (as a running turn is, each second): the zoom, the folds and the focused row stay
      await page.click('button[aria-label="zoom in"]')
      await page.click('button[aria-label="Fold all iterations"]')
      const folded = await height()
      await page.locator('#gantt-rows .row[data-i="3"]').focus()
      await page.locator("#gantt-rows").evaluate((n) => n.setAttribute("data-old", "1"))
      await page.evaluate(() => (globalThis as unknown as { dispatchEvent(e: unknown): void; HashChangeEvent: new (type: string) => unknown }).dispatchEvent(new (globalThis as unknown as { HashChangeEvent: new (type: string) => unknown }).HashChangeEvent("hashchange")))
      await page.waitForSelector("#gantt-rows:not([data-old])", WAIT)
      expect(await page.locator(".zoom-status").textContent()).toContain("showing")
      expect(await height()).toBe(folded)
      expect(await page.evaluate(() => (globalThis as unknown as Dom).document.activeElement?.getAttribute("data-i"))).toBe("3")
      await page.click('button[aria-label="Unfold all iterations"]')
      await page.screenshot({ path: path.join(SHOTS, "timeline-500-1280x800.png") })
      expect(errors).toEqual([])
    } finally {
      await close()
    }
  })

  it("a bar or an event row opens its details: the request, the response, tokens, cost, latency, the error; copy buttons; Enter opens, Esc closes", async () => {
    const { page, errors, close } = await open("", { permissions: ["clipboard-read", "clipboard-write"] })
    try {
      await timeline(page, "fail")
      await page.click('#gantt-rows .row[data-kind="model"]')
      const details = page.locator("#details")
      await details.locator('[data-part="response"] .call').waitFor(WAIT)
      expect(await details.locator(".facts").first().textContent()).toMatch(/model.*test-model.*latency.*tokens.*in \/ .*out.*cost\$0\.0010/s)
      await details.locator('[data-part="request"] .msg[data-role="user"]').waitFor(WAIT)
      expect(await details.locator('[data-part="request"]').textContent()).toContain("fail please")
      expect(await details.locator('[data-part="request"] .facts').textContent()).toBe("toolsstep, edit, fail, subagent")
      expect(await details.locator('[data-part="response"]').textContent()).toContain("→ fail")
      await details.locator('[data-part="response"] h3 button.copy').click()
      await page.waitForSelector('#details [data-part="response"] h3 button[data-copied]', WAIT)
      expect(await page.evaluate(() => (globalThis as unknown as Dom).navigator.clipboard.readText())).toContain('"name": "fail"')
      await page.keyboard.press("Escape")
      await details.waitFor({ ...WAIT, state: "detached" })
      expect(await page.evaluate(() => (globalThis as unknown as Dom).document.activeElement?.getAttribute("data-kind"))).toBe("model")
      // the failed tool call: red, and its details by keyboard
      const failed = page.locator('#gantt-rows .row[data-kind="tool"]')
      expect(await failed.getAttribute("class")).toContain("failed")
      expect(await failed.locator(".bar.tool").getAttribute("class")).toContain("error")
      await page.keyboard.press("ArrowDown")
      await page.keyboard.press("Enter")
      await details.locator('[data-part="result"]').waitFor(WAIT)
      expect(await details.locator(".facts dd.failure").first().textContent()).toBe("failed")
      expect(await details.locator('[data-part="result"]').textContent()).toContain("the disk is full")
      expect(await details.locator('[data-part="arguments"] pre').textContent()).toBe('{\n  "why": "testing"\n}')
      await page.click("#details button.close")
      // an event row opens the call it belongs to, with the event
      await page.click('#events .event[data-tag="ToolExecEnd"]')
      await details.locator('[data-part="event"]').waitFor(WAIT)
      expect(await details.locator(".details-head h2").textContent()).toBe("Tool call: fail")
      await page.keyboard.press("Escape")
      await page.click('#events .event[data-tag="TurnStart"]')
      expect(await details.locator(".details-head h2").textContent()).toMatch(/^Turn: /)
      expect(errors).toEqual([])
    } finally {
      await close()
    }
  })

  it("folds a 5 MB reply and draws a 10,000-message session virtually: the page stays short and draws at once", async () => {
    const { page, errors, close } = await open("#/s/long")
    try {
      const expander = page.locator("#conversation button.expander")
      await expander.waitFor(WAIT)
      expect(await expander.textContent()).toMatch(/Show all \(5\.\d MB, 80,000 lines\)/)
      const pageHeight = () => page.evaluate(() => (globalThis as unknown as Dom).document.documentElement.scrollHeight)
      expect(await pageHeight()).toBeLessThan(1600)
      await expander.click()
      await page.waitForSelector("#conversation .unfolded", WAIT)
      expect(await pageHeight()).toBeLessThan(1600)
      expect(await page.locator("#conversation .unfolded").evaluate((n) => n.scrollHeight > n.clientHeight)).toBe(true)

      await page.goto(`${origin}/#/s/big`)
      await page.waitForSelector('#conversation [data-index="0"]', WAIT)
      const drawn = await page.evaluate(() => performance.getEntriesByName("inspector:drawn").at(-1)?.startTime ?? -1)
      expect(drawn).toBeGreaterThan(0)
      expect(await page.locator("#conversation .msg").count()).toBeLessThan(60)
      expect(await pageHeight()).toBeLessThan(1600)
      await page.locator("#conversation").evaluate((n) => { n.scrollTop = n.scrollHeight })
      await page.waitForSelector('#conversation [data-index="9999"]', WAIT)
      expect(await page.locator('#conversation [data-index="9999"]').textContent()).toContain("Answer 9999")
      await page.goto(`${origin}/#/s/big/5000`)
      await page.waitForSelector('#conversation [data-index="5000"]', WAIT)
      expect(await page.locator("#conversation .msg").count()).toBeLessThan(60)
      expect(errors).toEqual([])
    } finally {
      await close()
    }
  })

  it("reads well: Markdown drawn and sanitised, code highlighted, arguments pretty, edits as diffs, results paired with their calls, a sub-turn's conversation under its call", async () => {
    const { page, errors, close } = await open("#/s/md")
    try {
      const reply = page.locator('#conversation [data-role="assistant"]')
      await reply.locator(".md").waitFor(WAIT)
      expect(await reply.locator(".md-h").textContent()).toBe("Plan")
      expect(await reply.locator("strong").textContent()).toBe("the fix")
      expect(await reply.locator("li").count()).toBe(2)
      expect(await reply.locator("li code").textContent()).toBe("inline code")
      expect(await reply.locator("pre.code .tok-k").first().textContent()).toBe("const")
      expect(await reply.locator("pre.code .tok-c").textContent()).toBe("// the answer")
      expect(await reply.locator(".md a").evaluateAll((links) => links.map((a) => a.getAttribute("href")))).toEqual(["https://example.com/docs"])
      expect(await reply.textContent()).toContain("<b>raw</b><img src=x")
      expect(await reply.locator("b, img").count()).toBe(0)
      expect(await page.evaluate(() => (globalThis as { pwned?: number }).pwned)).toBeUndefined()

      await page.goto(`${origin}/#/s/edit`)
      const diff = page.locator("#conversation pre.diff")
      await diff.waitFor(WAIT)
      expect(await diff.locator(".d-del").allTextContents()).toEqual(["- const b = 2\n"])
      expect(await diff.locator(".d-add").allTextContents()).toEqual(["+ const b = 3\n"])
      const result = page.locator('#conversation [data-role="tool"]')
      expect(await result.locator(".who").textContent()).toMatch(/call call-edit · asked in #\d+ · \d+ ms · its bar/)
      expect(await result.locator("pre.mono").evaluate((n) => (globalThis as unknown as Dom).getComputedStyle(n).fontFamily)).toMatch(/mono|Menlo|Consolas/i)
      await result.locator("a.bar-link").click()
      await page.waitForSelector('#details .details-body[data-row$="/tcall-edit"]', WAIT)
      expect(await page.evaluate(() => (globalThis as unknown as Dom).document.activeElement?.closest("#details") !== null)).toBe(true)

      await page.goto(`${origin}/#/s/loop`)
      const args = page.locator("#conversation .call pre.code").first()
      await args.waitFor(WAIT)
      expect(await args.textContent()).toBe('{\n  "n": -1,\n  "note": "first"\n}')

      await page.goto(`${origin}/#/s/sub`)
      const sub = page.locator("#conversation details.subturn")
      await sub.waitFor(WAIT)
      await sub.locator("summary").click()
      await sub.locator('.msg[data-role="assistant"]').waitFor(WAIT)
      expect(await sub.textContent()).toContain("count the files")
      expect(await sub.textContent()).toContain("There are 3 files.")
      expect(errors).toEqual([])
    } finally {
      await close()
    }
  })

  it("an exported file opens a call's details from its embedded log, with nothing fetched", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    const page = await context.newPage()
    const errors: Array<string> = []
    const requests: Array<string> = []
    page.on("pageerror", (error) => errors.push(error.message))
    page.on("request", (request) => requests.push(request.url()))
    try {
      await page.goto(`file://${exported}`)
      await page.waitForSelector("#conversation pre.diff", WAIT)
      await page.click('#turns a[data-source="log"]', WAIT)
      await page.click('#gantt-rows .row[data-kind="tool"]', WAIT)
      const details = page.locator("#details")
      await details.locator('[data-part="result"] pre.mono').waitFor(WAIT)
      expect(await details.locator('[data-part="result"]').textContent()).toContain("edited a.ts")
      expect(await details.locator('[data-part="arguments"] pre.diff .d-add').textContent()).toBe("+ const b = 3\n")
      await page.keyboard.press("Escape")
      await page.click('#gantt-rows .row[data-kind="model"]')
      await details.locator('[data-part="request"] .msg[data-role="user"]').waitFor(WAIT)
      expect(await details.locator('[data-part="request"]').textContent()).toContain("edit please")
      expect(requests.filter((url) => !url.startsWith("file:") && !url.startsWith("data:"))).toEqual([])
      expect(errors).toEqual([])
    } finally {
      await context.close()
    }
  })

  it("has no serious or critical accessibility problems (axe-core), and is photographed at 1280×800 and 390×844, light and dark", async () => {
    const axe = fs.readFileSync(AXE, "utf8")
    const wide = { width: 1280, height: 800 }, narrow = { width: 390, height: 844 }
    for (const [viewport, colorScheme] of [[wide, "light"], [narrow, "light"], [wide, "dark"], [narrow, "dark"]] as const) {
      const { page, errors, close } = await open("", { viewport, colorScheme })
      const size = `${viewport.width}x${viewport.height}-${colorScheme}`
      const scan = async (name: string) => {
        await page.evaluate(axe)
        const found = await page.evaluate(() =>
          (globalThis as unknown as { axe: { run: (o: unknown) => Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: Array<string> }> }> }> } }).axe
            .run({ resultTypes: ["violations"] })
            .then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")) }))))
        expect(found.filter((v) => v.impact === "serious" || v.impact === "critical"), `${name} at ${size}`).toEqual([])
        await page.screenshot({ path: path.join(SHOTS, `${name}-${size}.png`) })
      }
      try {
        await page.waitForSelector('#sessions tr[data-session="md"]', WAIT)
        await scan("sessions")
        await page.goto(`${origin}/#/s/md`)
        await page.waitForSelector("#conversation .md", WAIT)
        await scan("conversation")
        await page.goto(`${origin}/#/s/edit`)
        await page.waitForSelector("#conversation pre.diff", WAIT)
        await scan("edit")
        await timeline(page, "sub")
        expect(await page.locator("#gantt-rows .bar.model").first().evaluate((n) => n.getBoundingClientRect().width)).toBeGreaterThan(1)
        await scan("timeline")
        await page.click('#gantt-rows .row[data-kind="model"]')
        await page.waitForSelector('#details [data-part="response"] .msg', WAIT)
        await scan("details")
        expect(errors).toEqual([])
      } finally {
        await close()
      }
    }
  })
})
