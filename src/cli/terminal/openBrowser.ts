/** Opening a URL in the desktop's browser, for the commands that offer `--open`. */
import * as nodeChild from "node:child_process"

/** Asks the desktop to open `url`; nothing happens where there is no desktop (the caller has printed the URL). */
export const openBrowser = (url: string): void => {
  const command = process.platform === "darwin" ? "open" : process.platform === "win32" ? "explorer" : "xdg-open"
  try {
    const child = nodeChild.spawn(command, [url], { stdio: "ignore", detached: true })
    child.on("error", () => {})
    child.unref()
  } catch {
    // no opener: the URL is printed
  }
}
