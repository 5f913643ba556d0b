/**
 * The sandbox's proxy on its own (no bubblewrap needed): a request whose client goes away — a
 * confined command killed mid-request — leaves nothing open upstream.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import * as net from "node:net"
import { serve } from "../../src/layers/sandbox/proxy.ts"
import { waitUntil } from "../support/waitUntil.ts"

describe("the sandbox's proxy", () => {
  it.live("ends the upstream request when its client goes away", () =>
    Effect.gen(function*() {
      let upstreamClosed = false
      let upstreamGot = false
      // an upstream that answers nothing: only the proxy can end the request
      const upstream = http.createServer((req) => {
        upstreamGot = true
        req.socket.on("close", () => (upstreamClosed = true))
      })
      yield* Effect.acquireRelease(
        Effect.promise(() => new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve))),
        () => Effect.sync(() => upstream.closeAllConnections()).pipe(Effect.andThen(Effect.sync(() => upstream.close())))
      )
      const upstreamPort = (upstream.address() as net.AddressInfo).port
      const proxyPort = yield* serve({ host: "127.0.0.1", port: 0 }, [`127.0.0.1:${upstreamPort}`])
      const client = net.connect(proxyPort, "127.0.0.1")
      client.on("error", () => {})
      client.write(`GET http://127.0.0.1:${upstreamPort}/slow HTTP/1.1\r\nhost: 127.0.0.1:${upstreamPort}\r\n\r\n`)
      yield* Effect.promise(() => waitUntil("the request to reach upstream", () => upstreamGot))
      client.destroy()
      yield* Effect.promise(() => waitUntil("the upstream request to end", () => upstreamClosed))
      expect(upstreamClosed).toBe(true)
    }).pipe(Effect.scoped))
})
