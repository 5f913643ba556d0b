/**
 * The inspector page in a real browser: headless Chromium from the distribution's packages, driven
 * by playwright-core, over a SQLite store seeded by real turns of a scripted model. One browser for
 * the file, a new page per test; every wait is on a selector with a generous deadline, never a sleep.
 * Skipped, saying so, where Chromium is not installed.
 */
import * as fs from "node:fs"
import * as http from "node:http"
import type * as net from "node:net"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Browser } from "playwright-core"
import { chromiumPresent, launchChromium } from "../support/chromium.ts"
import { Message } from "effect-agent-loop"
import { isolatedEnv, root, runCli, tempDir } from "../support/cliProcess.ts"
import { HOSTILE, type InspectorFixture, RED_PIXEL, startInspector, turn } from "../support/inspector.ts"

const present = chromiumPresent("inspector browser tests")

/** Deadline of every wait for the page: generous, since the machine may be busy. */
const WAIT = { timeout: 30_000 }

let f: InspectorFixture
let browser: Browser

describe.skipIf(!present)("inspector in Chromium", { timeout: 120_000 }, () => {
  beforeAll(async () => {
    f = await startInspector()
    await f.run(turn("img", [Message.text("look at this"), Message.image("image/png", RED_PIXEL)]))
    await f.run(turn("sub", "delegate please"))
    await f.run(turn("hostile", "hostile please"))
    browser = await launchChromium()
  }, 120_000)

  afterAll(async () => {
    await browser?.close()
    await f?.close()
  })

  const newPage = async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 720 } })
    const page = await context.newPage()
    const errors: Array<string> = []
    page.on("pageerror", (error) => errors.push(error.message))
    return { page, errors, close: () => context.close() }
  }

  it("refuses a visit without the token", async () => {
    const { page, close } = await newPage()
    try {
      const response = await page.goto(f.origin + "/")
      expect(response!.status()).toBe(403)
      expect(await page.locator("#app").count()).toBe(0)
    } finally {
      await close()
    }
  })

  it("sends the token in a header, never a cookie, and keeps working after a reload without the token in the address", async () => {
    const { page, errors, close } = await newPage()
    const api: Array<Record<string, string>> = []
    page.on("request", (request) => {
      if (request.url().includes("/api/")) api.push(request.headers())
    })
    try {
      await page.goto(f.url)
      await page.waitForSelector('#sessions tr[data-session="img"]', WAIT)
      await page.waitForSelector("#live-status:text('live')", WAIT)
      expect(page.url()).toBe(`${f.origin}/`)
      await page.reload()
      await page.waitForSelector('#sessions tr[data-session="img"]', WAIT)
      await page.waitForSelector("#live-status:text('live')", WAIT)
      expect(api.length).toBeGreaterThanOrEqual(4)
      for (const headers of api) {
        expect(headers["x-agent-loop-token"]).toBe(f.token)
        expect(headers["cookie"]).toBeUndefined()
      }
      const [cookie] = await page.context().cookies(f.origin)
      expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/" })
      expect(cookie!.name).toMatch(/^agent_loop_[0-9a-f]{16}$/)
      expect(cookie!.value).not.toContain(f.token)
      expect(errors).toEqual([])
    } finally {
      await close()
    }
  })

  it("a page on another loopback port gets the inspector's cookie from the browser but never the token, and cannot read the data", async () => {
    const received: Array<string> = []
    const other = http.createServer((request, response) => {
      received.push(request.headers.cookie ?? "")
      response.setHeader("content-type", "text/html")
      response.end("<!doctype html><title>other</title>")
    })
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve))
    const { page, close } = await newPage()
    try {
      await page.goto(f.url)
      await page.waitForSelector('#sessions tr[data-session="img"]', WAIT)
      await page.goto(`http://127.0.0.1:${(other.address() as net.AddressInfo).port}/`)
      // cookies keep to the host, not the port: the other server does get the inspector's cookie
      expect(received.join("\n")).toMatch(/agent_loop_[0-9a-f]{16}=/)
      expect(received.join("\n")).not.toContain(f.token)
      const read = await page.evaluate((origin) =>
        fetch(`${origin}/api/sessions`, { credentials: "include" }).then((r) => `read ${r.status}`, (e: Error) => `refused: ${e.name}`), f.origin)
      expect(read).toBe("refused: TypeError")
    } finally {
      await close()
      await new Promise((resolve) => other.close(resolve))
    }
  })

  it("a tab opened by the cookie alone, without the token, says how to open it and loads no data", async () => {
    const { page, close } = await newPage()
    try {
      await page.goto(f.url)
      await page.waitForSelector('#sessions tr[data-session="img"]', WAIT)
      const fresh = await page.context().newPage()
      const response = await fresh.goto(f.origin + "/")
      expect(response!.status()).toBe(200)
      await fresh.waitForSelector("#app .error", WAIT)
      expect(await fresh.locator("#app .error").textContent()).toContain("?token=")
      expect(await fresh.locator("#sessions").count()).toBe(0)
    } finally {
      await close()
    }
  })

  it("lists the sessions with their first prompts, and the token leaves the address bar", async () => {
    const { page, errors, close } = await newPage()
    try {
      await page.goto(f.url)
      await page.waitForSelector('#sessions tr[data-session="img"]', WAIT)
      expect(await page.locator('#sessions tr[data-session="sub"] a').textContent()).toBe("delegate please")
      expect(page.url()).not.toContain("token=")
      await page.fill("#search", "delegate")
      await page.press("#search", "Enter")
      await page.waitForSelector('#sessions tr[data-session="img"]', { ...WAIT, state: "detached" })
      expect(await page.locator("#sessions tbody tr").count()).toBe(1)
      expect(errors).toEqual([])
    } finally {
      await close()
    }
  })

  it("shows a conversation with its image as an image", async () => {
    const { page, errors, close } = await newPage()
    try {
      await page.goto(`${f.url}#/s/img`)
      const image = page.locator("#conversation img.part")
      await image.waitFor(WAIT)
      expect(await image.evaluate((img) => (img as unknown as { complete: boolean; naturalWidth: number }).complete && (img as unknown as { naturalWidth: number }).naturalWidth)).toBe(1)
      expect(await page.locator('#conversation [data-role="assistant"]').textContent()).toContain("You said: look at this")
      expect(errors).toEqual([])
    } finally {
      await close()
    }
  })

  it("draws a turn's timeline with the sub-turn nested under the tool call that spawned it", async () => {
    const { page, errors, close } = await newPage()
    try {
      await page.goto(`${f.url}#/s/sub`)
      await page.click('#turns a[data-source="events"]', WAIT)
      await page.waitForSelector('#gantt .row[data-kind="turn"][data-level="2"]', WAIT)
      const rows = await page.locator("#gantt .row").evaluateAll((nodes) =>
        nodes.map((n) => [n.getAttribute("data-kind"), Number(n.getAttribute("data-level")), n.querySelector(".name")!.textContent])
      )
      const sub = rows.findIndex(([kind, level]) => kind === "turn" && level === 2)
      expect(rows[sub - 1]).toEqual(["tool", 1, "subagent"])
      expect(rows[sub]![2]).toContain("count the files")
      expect(await page.locator("#context-chart rect").count()).toBe(2)
      expect(await page.locator("#events .event").count()).toBeGreaterThan(5)
      if (process.env.INSPECTOR_SCREENSHOT === "1") {
        await page.screenshot({ path: path.join(root, "docs", "images", "timeline.png") })
      }
      expect(errors).toEqual([])
    } finally {
      await close()
    }
  })

  it("streams a live turn into the page while it runs", async () => {
    const { page, errors, close } = await newPage()
    try {
      await page.goto(`${f.url}#/s/live`)
      await page.waitForSelector("#live-status:text('live')", WAIT)
      const running = f.run(turn("live", "wait for the gate"))
      await page.waitForSelector('#turns a[data-source="events"][data-status="running"]', WAIT)
      await page.click('#turns a[data-source="events"]')
      await page.waitForSelector('#gantt .row[data-kind="tool"] >> text=gate', WAIT)
      await f.openGate()
      await running
      await page.waitForSelector("h2:text('completed')", WAIT)
      expect(await page.locator('#gantt .row[data-kind="tool"] .bar.tool').getAttribute("title")).toContain("the gate opened")
      expect(errors).toEqual([])
    } finally {
      await close()
    }
  })

  it("finds sessions by what they hold (messages, tool names), with the query and filters in the URL, a title per page and a link per entry", async () => {
    const { page, errors, close } = await newPage()
    try {
      await page.goto(f.url)
      await page.waitForSelector('#sessions tr[data-session="img"]', WAIT)
      expect(await page.title()).toBe("Sessions · agent-loop inspector")
      // the model's answer, not the key, the workspace or the first prompt
      await page.fill("#search", "You said: look")
      await page.press("#search", "Enter")
      await page.waitForSelector('#sessions tr[data-session="sub"]', { ...WAIT, state: "detached" })
      expect(await page.locator("#sessions tbody tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-session")))).toEqual(["img"])
      expect(await page.locator('#sessions tr[data-session="img"] .match').textContent()).toContain("You said: look at this")
      expect(decodeURIComponent(new URL(page.url()).hash)).toBe("#/?q=You+said:+look".replace(/\+/g, "+"))
      expect(await page.title()).toBe("\u201cYou said: look\u201d · sessions · agent-loop inspector")
      // the URL holds the search: a reload shows the same
      await page.reload()
      await page.waitForSelector('#sessions tr[data-session="img"]', WAIT)
      expect(await page.locator("#sessions tbody tr").count()).toBe(1)
      expect(await page.inputValue("#search")).toBe("You said: look")
      // a tool's name finds the session that called it
      await page.goto(`${f.url}#/?q=echo`)
      await page.waitForSelector('#sessions tr[data-session="hostile"]', WAIT)
      expect(await page.locator('#sessions tr[data-session="img"]').count()).toBe(0)
      // filters: status and model, written to the URL
      await page.goto(`${f.url}#/`)
      await page.waitForSelector('#sessions tr[data-session="img"]', WAIT)
      await page.selectOption("#status-filter", "running")
      await page.waitForSelector('#sessions tr[data-session="img"]', { ...WAIT, state: "detached" })
      expect(new URL(page.url()).hash).toBe("#/?status=running")
      await page.selectOption("#status-filter", "completed")
      await page.waitForSelector('#sessions tr[data-session="img"]', WAIT)
      await page.fill("#model-filter", "no-such-model")
      await page.press("#model-filter", "Enter")
      await page.waitForSelector("#session-count:text('0 sessions')", WAIT)
      await page.fill("#model-filter", "test-model")
      await page.press("#model-filter", "Enter")
      await page.waitForSelector('#sessions tr[data-session="img"]', WAIT)
      expect(new URL(page.url()).hash).toBe("#/?status=completed&model=test-model")
      // an entry's own link opens the conversation there; the tab says which session
      await page.goto(`${f.url}#/s/img`)
      await page.waitForSelector('#conversation .msg[data-index="1"] a.anchor', WAIT)
      expect(await page.locator('#conversation .msg[data-index="1"] a.anchor').getAttribute("href")).toBe("#/s/img/1")
      expect(await page.title()).toBe("img · agent-loop inspector")
      expect(errors).toEqual([])
    } finally {
      await close()
    }
  })

  it("lists a session whose first turn is running at once, marked running, and its in-flight bar grows", async () => {
    const { page, errors, close } = await newPage()
    try {
      await page.goto(f.url)
      await page.waitForSelector("#live-status:text('live')", WAIT)
      const running = f.run(turn("fresh", "wait for the gate, please"))
      // nothing of it is stored yet: the list has it from the live events
      await page.waitForSelector('#sessions tr[data-session="fresh"] .badge:text("running")', WAIT)
      expect(await page.locator('#sessions tr[data-session="fresh"] a').textContent()).toBe("wait for the gate, please")
      await page.goto(`${f.url}#/s/fresh`)
      await page.click('#turns a[data-status="running"]', WAIT)
      const bar = '#gantt .row[data-kind="tool"] .bar.tool'
      await page.waitForSelector(bar, WAIT)
      // the call in flight reaches the present: the whole track, not a sliver, and still running
      const track = (await page.locator('#gantt .row[data-kind="tool"] .track').boundingBox())!.width
      expect((await page.locator(bar).boundingBox())!.width).toBeGreaterThan(track * 0.9)
      const running_ = (title: string | null) => {
        const m = /(\d+(?:\.\d+)?) (ms|s) \(running\)/.exec(title ?? "")
        return m === null ? -1 : Number(m[1]) * (m[2] === "s" ? 1000 : 1)
      }
      const before = running_(await page.locator(bar).getAttribute("title"))
      expect(before).toBeGreaterThanOrEqual(0)
      // drawn again each second while the turn runs: the bar's time grows with it
      await page.waitForFunction(([selector, ms]) => {
        const m = /(\d+(?:\.\d+)?) (ms|s) \(running\)/.exec((globalThis as any).document.querySelector(selector as string)?.getAttribute("title") ?? "")
        return m !== null && Number(m[1]) * (m[2] === "s" ? 1000 : 1) > (ms as number) + 900
      }, [bar, before] as const, WAIT)
      await f.openGate()
      await running
      expect(errors).toEqual([])
    } finally {
      await close()
    }
  })

  it("a streamed reply flows in at the end of the conversation, as the entry it becomes", async () => {
    const { page, errors, close } = await newPage()
    try {
      await page.goto(`${f.url}#/s/streamy`)
      await page.waitForSelector("#live-status:text('live')", WAIT)
      await page.waitForSelector("#conversation", WAIT)
      const running = f.run(turn("streamy", "stream slowly, please"))
      await page.waitForSelector("#live-text.msg.assistant >> text=The answer flows in", WAIT)
      // after the conversation, not above it
      expect(await page.evaluate(() => {
        const d = (globalThis as any).document
        return (d.getElementById("conversation").compareDocumentPosition(d.getElementById("live-text")) & 4) !== 0
      })).toBe(true)
      await running
      // once the turn ends, the streamed text is the conversation's last entry
      await page.waitForSelector("#live-text", { ...WAIT, state: "detached" })
      await page.waitForSelector("#conversation .msg.assistant >> text=The answer flows in piece by piece.", WAIT)
      expect(errors).toEqual([])
    } finally {
      await close()
    }
  })

  it("at 390 px and in the dark: the list and the timeline fit, the theme follows the system and the toggle, and is kept", async () => {
    const shots = path.join(root, ".tmp", "inspector-screenshots")
    fs.mkdirSync(shots, { recursive: true })
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: "dark" })
    const page = await context.newPage()
    const errors: Array<string> = []
    page.on("pageerror", (error) => errors.push(error.message))
    const background = () => page.evaluate(() => (globalThis as any).getComputedStyle((globalThis as any).document.body).backgroundColor as string)
    try {
      await page.goto(f.url)
      await page.waitForSelector('#sessions tr[data-session="img"]', WAIT)
      expect(await background()).toBe("rgb(20, 23, 28)")
      // nothing sticks out sideways but the table, which scrolls in its own box
      expect(await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth as number)).toBeLessThanOrEqual(390)
      await page.screenshot({ path: path.join(shots, "find-list-390x844-dark.png") })
      await page.click("#theme-toggle")
      expect(await background()).toBe("rgb(255, 255, 255)")
      await page.reload()
      await page.waitForSelector('#sessions tr[data-session="img"]', WAIT)
      expect(await background()).toBe("rgb(255, 255, 255)")
      await page.screenshot({ path: path.join(shots, "find-list-390x844-light.png") })
      await page.goto(`${f.url}#/s/sub`)
      await page.click("#turns a", WAIT)
      await page.waitForSelector('#gantt .row[data-kind="model"] .bar.model', WAIT)
      for (const box of await page.locator("#gantt .bar.model").evaluateAll((bars) => bars.map((b) => b.getBoundingClientRect().toJSON()))) {
        expect(box.width).toBeGreaterThan(0)
        expect(box.right).toBeLessThanOrEqual(390)
      }
      await page.screenshot({ path: path.join(shots, "find-timeline-390x844-light.png") })
      await page.click("#theme-toggle")
      expect(await background()).toBe("rgb(20, 23, 28)")
      await page.screenshot({ path: path.join(shots, "find-timeline-390x844-dark.png") })
      await page.setViewportSize({ width: 1280, height: 800 })
      await page.screenshot({ path: path.join(shots, "find-timeline-1280x800-dark.png") })
      expect(errors).toEqual([])
    } finally {
      await context.close()
    }
  })

  it("opens an exported file from disk, where a hostile <script> in a tool result shows as text and never runs", async () => {
    const home = tempDir()
    const file = path.join(home, "hostile.html")
    const done = await runCli(["sessions", "export", "hostile", "--html", file], { env: isolatedEnv(home, { AGENT_LOOP_DATA_DIR: path.dirname(f.database) }) })
    expect(done.code).toBe(0)
    const { page, errors, close } = await newPage()
    const requests: Array<string> = []
    page.on("request", (request) => requests.push(request.url()))
    try {
      await page.goto(`file://${file}`)
      const result = page.locator('#conversation [data-role="tool"]')
      await result.waitFor(WAIT)
      expect(await result.textContent()).toContain(HOSTILE)
      expect(await page.evaluate(() => (globalThis as { pwned?: number }).pwned)).toBeUndefined()
      expect(await page.title()).toBe("agent-loop session hostile")
      expect(await page.locator("#conversation script, #conversation img:not(.part)").count()).toBe(0)
      expect(requests.filter((url) => !url.startsWith("file:") && !url.startsWith("data:"))).toEqual([])
      expect(errors).toEqual([])
    } finally {
      await close()
    }
  })

  it("runs no inline script but its own even if one got into the file: the policy allows the page's script by its hash only", async () => {
    const home = tempDir()
    const file = path.join(home, "hostile.html")
    const done = await runCli(["sessions", "export", "hostile", "--html", file], { env: isolatedEnv(home, { AGENT_LOOP_DATA_DIR: path.dirname(f.database) }) })
    expect(done.code).toBe(0)
    // as if the escaping had failed: markup of the session's placed in the document itself
    const html = fs.readFileSync(file, "utf8").replace('<main id="app">', `<main id="app">${HOSTILE}`)
    fs.writeFileSync(file, html)
    const { page, close } = await newPage()
    const violations: Array<string> = []
    page.on("console", (message) => {
      if (message.text().includes("Content Security Policy")) violations.push(message.text())
    })
    try {
      await page.goto(`file://${file}`)
      await page.locator('#conversation [data-role="tool"]').waitFor(WAIT)
      expect(await page.evaluate(() => (globalThis as { pwned?: number }).pwned)).toBeUndefined()
      expect(await page.title()).toBe("agent-loop session hostile")
      expect(violations.length).toBeGreaterThan(0)
    } finally {
      await close()
    }
  })
})
