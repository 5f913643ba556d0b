/**
 * A small web server on 127.0.0.1 for `web_fetch`: pages, redirects, a large body and a body that
 * never ends, by path. It records what it was asked, and closes every connection when stopped.
 */
import * as http from "node:http"

/** A running server. */
export interface WebServer {
  /** `http://127.0.0.1:PORT`. */
  readonly url: string
  readonly port: number
  /** Each request's path and headers, in order. */
  readonly requests: Array<{ readonly path: string; readonly headers: http.IncomingHttpHeaders }>
  /** Resolves when a request for `path` has arrived. */
  readonly arrived: (path: string) => Promise<void>
  readonly close: () => Promise<void>
}

/** The page served at `/page`. */
export const PAGE = "<!doctype html><html><head><title>T</title><style>body { color: red }</style>" +
  "<script>document.write('scripted')</script></head><body><h1>Release notes</h1><p>Version <b>2</b> is " +
  "<a href=\"/changes\">out</a>.</p><ul><li>faster</li><li>smaller</li></ul></body></html>"

/** Starts the server. Routes: `/page` (HTML), `/text` (plain), `/r/N` (redirects to `/r/N+1`), `/to?url=U` (redirects to U), `/big` (1 MiB), `/slow` (never ends), `/image` (PNG bytes). */
export const startWebServer = async (): Promise<WebServer> => {
  const requests: Array<{ path: string; headers: http.IncomingHttpHeaders }> = []
  const waiters: Array<{ path: string; resolve: () => void }> = []
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1")
    requests.push({ path: url.pathname, headers: req.headers })
    for (const waiter of waiters.filter((w) => w.path === url.pathname)) waiter.resolve()
    const redirect = /^\/r\/(\d+)$/.exec(url.pathname)
    if (url.pathname === "/page") return res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(PAGE)
    if (url.pathname === "/text") return res.writeHead(200, { "content-type": "text/plain" }).end("plain text\n")
    if (redirect !== null) return res.writeHead(302, { location: `/r/${Number(redirect[1]) + 1}` }).end()
    if (url.pathname === "/to") return res.writeHead(301, { location: url.searchParams.get("url") ?? "/" }).end()
    if (url.pathname === "/big") return res.writeHead(200, { "content-type": "text/plain" }).end("x".repeat(1024 * 1024))
    if (url.pathname === "/slow") {
      res.writeHead(200, { "content-type": "text/plain" })
      return res.write("the start, and then nothing\n")
    }
    if (url.pathname === "/image") return res.writeHead(200, { "content-type": "image/png" }).end(Buffer.from([0x89, 0x50, 0x4e, 0x47]))
    res.writeHead(200, { "content-type": "text/plain" }).end(`at ${url.pathname}`)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as { port: number }).port
  // a test that forgets to stop it does not keep the process alive
  server.unref()
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    arrived: (path) =>
      requests.some((r) => r.path === path) ? Promise.resolve() : new Promise((resolve) => waiters.push({ path, resolve })),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
