/**
 * The sandbox's network on real bubblewrap: no network at all by default (a loopback server on
 * the host is out of reach), an allowed host reached through the loop's proxy (plain HTTP and
 * HTTPS CONNECT, with `curl` honouring the proxy variables the sandbox sets), every other host
 * refused with 403, and a wildcard never unlocking loopback. Servers listen on 127.0.0.1 only and
 * stop with each test. Skipped where bubblewrap is missing, and the curl cases where curl is.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawnSync } from "node:child_process"
import { SANDBOX_DENIED_MARKER, SandboxLinux, type SandboxShape } from "effect-agent-loop"
import { bwrapRuns, execIn, makeHome, startTextServer, suiteName } from "../support/sandbox.ts"

const curl = spawnSync("curl", ["--version"]).status === 0

/** Runs `body` with a loopback server, a fresh home and workspace, and a Linux sandbox allowing `hosts(port)`. */
const withServer = <A, E>(
  hosts: (port: number) => ReadonlyArray<string>,
  body: (sandbox: SandboxShape, workspace: string, port: number) => Effect.Effect<A, E>
) =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* Effect.acquireRelease(Effect.promise(() => startTextServer("hello from the host")), (s) => Effect.promise(s.close))
    const dirs = yield* Effect.acquireRelease(Effect.sync(makeHome), (d) => Effect.sync(d.cleanup))
    const sandbox = yield* SandboxLinux.make({ home: dirs.home, allowedHosts: hosts(server.port) })
    return yield* body(sandbox, dirs.workspace, server.port)
  })).pipe(Effect.provide(NodeServices.layer))

/** A request through `$http_proxy`, made with the same Node the sandbox's bridge runs: `GET url` or a CONNECT to `target`. */
const nodeClient = (mode: "get" | "connect", target: string) =>
  `${process.execPath} -e '
const http = require("node:http"); const proxy = new URL(process.env.http_proxy)
const options = { host: proxy.hostname, port: proxy.port, method: "${mode === "get" ? "GET" : "CONNECT"}", path: "${target}" }
const req = http.request(options)
req.on("response", (res) => { let body = ""; res.on("data", (c) => body += c); res.on("end", () => console.log(res.statusCode, body.trim())) })
req.on("connect", (res, socket) => {
  socket.write("GET / HTTP/1.0\\r\\nHost: x\\r\\n\\r\\n"); let body = ""
  socket.on("data", (c) => body += c); socket.on("end", () => console.log(res.statusCode, body.split("\\r\\n\\r\\n")[1]))
})
req.on("error", (e) => { console.log("error", e.code); process.exitCode = 1 })
req.end()'`

describe.skipIf(!bwrapRuns)(suiteName("the sandbox's network (bubblewrap)"), () => {
  it.live("has no network by default: a loopback server on the host is out of reach, and the proxy variables are unset", () =>
    withServer(() => [], (sandbox, workspace, port) =>
      Effect.gen(function*() {
        const result = yield* execIn(sandbox, workspace, {
          command: `echo "[$http_proxy]"; ${process.execPath} -e 'require("node:net").connect(${port}, "127.0.0.1").on("connect", () => console.log("reached")).on("error", (e) => { console.log(e.code); process.exit(7) })'`
        })
        expect(result.text.split("\n").slice(0, 3)).toEqual(["exit code: 7", "[]", "ECONNREFUSED"])
        expect(result.text).toContain(SANDBOX_DENIED_MARKER)
      })))

  it.live("reaches a host named in the allowed list through the proxy, plain HTTP and CONNECT, and refuses the rest with 403", () =>
    withServer((port) => [`127.0.0.1:${port}`], (sandbox, workspace, port) =>
      Effect.gen(function*() {
        const get = yield* execIn(sandbox, workspace, { command: nodeClient("get", `http://127.0.0.1:${port}/page`) })
        expect(get.text).toBe("exit code: 0\n200 hello from the host\n")
        const tunnel = yield* execIn(sandbox, workspace, { command: nodeClient("connect", `127.0.0.1:${port}`) })
        expect(tunnel.text).toBe("exit code: 0\n200 hello from the host\n")
        const other = yield* execIn(sandbox, workspace, { command: nodeClient("get", `http://127.0.0.1:${port + 1}/`) })
        expect(other.text).toContain(`403 agent-loop sandbox: not allowed: 127.0.0.1:${port + 1} is not in the sandbox's allowed hosts`)
        const connect = yield* execIn(sandbox, workspace, { command: nodeClient("connect", "example.com:443") })
        expect(connect.text).toContain("403")
      })))

  it.live("never lets a wildcard reach loopback: only a host named literally does", () =>
    withServer(() => ["*", "*.localhost"], (sandbox, workspace, port) =>
      Effect.gen(function*() {
        const result = yield* execIn(sandbox, workspace, { command: nodeClient("get", `http://localhost:${port}/`) })
        expect(result.text).toContain("403 agent-loop sandbox: not allowed: localhost resolves to")
        expect(result.text).toContain("not a public address")
      })))

  it.live.skipIf(!curl)("lets curl through with the proxy variables the sandbox sets, and marks curl's refusal", () =>
    withServer((port) => [`localhost:${port}`], (sandbox, workspace, port) =>
      Effect.gen(function*() {
        const allowed = yield* execIn(sandbox, workspace, { command: `curl -sS --max-time 20 http://localhost:${port}/` })
        expect(allowed.text).toBe("exit code: 0\nhello from the host")
        const refused = yield* execIn(sandbox, workspace, { command: `curl -sS --max-time 20 https://example.com/` })
        expect(refused.isError).toBe(true)
        expect(refused.text).toContain("403")
        expect(refused.text).toContain(`${SANDBOX_DENIED_MARKER}the sandbox's proxy refused a host that is not allowed`)
      })))
})
