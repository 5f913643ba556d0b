/**
 * The distribution's Chromium for browser tests, driven by playwright-core: where it is, whether it
 * is installed (the tests skip, saying so, where it is not), and one way to start it headless.
 */
import * as fs from "node:fs"
import { type Browser, chromium } from "playwright-core"

/** The Debian package's browser (`apt-get install chromium`). */
export const CHROMIUM = "/usr/bin/chromium"

/** Whether it is installed; when not, `what` is said to be skipped, once. */
export const chromiumPresent = (what: string): boolean => {
  const present = fs.existsSync(CHROMIUM)
  if (!present) console.warn(`${what} skipped: ${CHROMIUM} is not installed (apt-get install chromium)`)
  return present
}

/** Chromium started headless, without the sandbox (tests run as root in CI) or the GPU. */
export const launchChromium = (): Promise<Browser> =>
  chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"]
  })
