/**
 * The network bridge inside the sandbox: a tiny program, run with this process's own Node binary
 * (`process.execPath -e BRIDGE_SOURCE -- SOCKET PORT COMMAND ARGS…`), that listens on the
 * sandbox's loopback at `PORT` and forwards each connection to the loop's proxy through the Unix
 * socket bound into the sandbox — the only way out of its empty network namespace. It starts the
 * command once it listens, so the command never finds the port closed, and exits with the
 * command's status.
 *
 * It runs only when some host is allowed: the default, no network, starts no Node at all.
 */

/** The bridge program (CommonJS, as `node -e` runs it). */
export const BRIDGE_SOURCE = String.raw`"use strict"
const net = require("node:net")
const { spawn } = require("node:child_process")
const [socket, port, command, ...args] = process.argv.slice(1)
const server = net.createServer((client) => {
  const upstream = net.connect(socket)
  const close = () => { client.destroy(); upstream.destroy() }
  client.on("error", close); upstream.on("error", close)
  client.on("close", close); upstream.on("close", close)
  client.pipe(upstream); upstream.pipe(client)
})
server.on("error", (e) => { process.stderr.write("sandbox bridge: " + e.message + "\n"); process.exit(125) })
server.listen(Number(port), "127.0.0.1", () => {
  // the command's process group gets the caller's signals itself; the bridge stays to report how it ended
  const ignore = () => {}
  for (const s of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(s, ignore)
  const child = spawn(command, args, { stdio: "inherit" })
  child.on("error", (e) => { process.stderr.write("sandbox: cannot run " + command + ": " + e.message + "\n"); process.exit(127) })
  child.on("exit", (code, signal) => {
    if (signal === null) process.exit(code === null ? 1 : code)
    process.removeAllListeners(signal)
    process.kill(process.pid, signal)
  })
})
`

/** The command that runs the bridge before `command` (to be followed by the command and its arguments). */
export const bridgeCommand = (node: string, socket: string, port: number): ReadonlyArray<string> =>
  [node, "-e", BRIDGE_SOURCE, "--", socket, String(port)]
