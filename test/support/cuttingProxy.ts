/**
 * A TCP proxy on 127.0.0.1 that cuts a client's connection at a chosen statement: the way to make
 * a database connection drop at an exact point of a transaction, which a server restart does only
 * by chance. Armed with a piece of the statement's text, it cuts the connection that sends it:
 *
 * - `before`: the statement never reaches the server (the connection is closed in its place);
 * - `after`: the statement reaches the server and runs, and its answer is dropped as the
 *   connection is closed (a `COMMIT` applied but never acknowledged).
 *
 * Each arming cuts once. The proxy stops with `close`, or when the process ends.
 */
import * as net from "node:net"

/** Where the cut falls, relative to the statement. */
export type CutPoint = "before" | "after"

export interface CuttingProxy {
  readonly port: number
  /** Cuts the next connection that sends `text` (as bytes of its message). */
  readonly arm: (text: string, point: CutPoint) => void
  /** How many cuts happened. */
  readonly cuts: () => number
  readonly close: () => Promise<void>
}

export const startCuttingProxy = (targetPort: number): Promise<CuttingProxy> =>
  new Promise((resolve, reject) => {
    let armed: { readonly text: Buffer; readonly point: CutPoint } | undefined
    let cuts = 0
    const sockets = new Set<net.Socket>()
    const server = net.createServer((client) => {
      const upstream = net.connect(targetPort, "127.0.0.1")
      sockets.add(client).add(upstream)
      const cut = () => {
        cuts++
        client.destroy()
        upstream.destroy()
      }
      // set once this connection sent the armed statement: its next answer is not passed on
      let dropAnswer = false
      // the statements this connection prepared, by name: a prepared statement is run again by
      // its name alone (a Bind message), without its text
      const prepared = new Map<string, string>()
      const sends = (chunk: Buffer, text: Buffer): boolean => {
        if (chunk.includes(text)) return true
        for (const [name, query] of prepared) {
          if (query.includes(text.toString()) && chunk.includes(Buffer.from(`\0${name}\0`))) return true
        }
        return false
      }
      client.on("data", (chunk: Buffer) => {
        // a Parse message: 'P', its length, the statement's name, NUL, its text, NUL
        for (const match of chunk.toString("latin1").matchAll(/P[\s\S]{4}([^\0]+)\0([^\0]*)\0/g)) prepared.set(match[1]!, match[2]!)
        const hit = armed !== undefined && sends(chunk, armed.text)
        if (hit && armed!.point === "before") {
          armed = undefined
          return cut()
        }
        if (hit) {
          armed = undefined
          dropAnswer = true
        }
        upstream.write(chunk)
      })
      upstream.on("data", (chunk: Buffer) => {
        if (dropAnswer) return cut()
        client.write(chunk)
      })
      const end = () => {
        client.destroy()
        upstream.destroy()
        sockets.delete(client)
        sockets.delete(upstream)
      }
      client.on("close", end).on("error", end)
      upstream.on("close", end).on("error", end)
    })
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      server.unref()
      resolve({
        port: (server.address() as net.AddressInfo).port,
        arm: (text, point) => {
          armed = { text: Buffer.from(text), point }
        },
        cuts: () => cuts,
        close: () =>
          new Promise((done) => {
            for (const socket of sockets) socket.destroy()
            server.close(() => done())
          })
      })
    })
  })
