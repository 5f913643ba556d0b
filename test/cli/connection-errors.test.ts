/**
 * A connection that fails names its cause with host and port, through the real CLI: a closed port,
 * an unresolvable `.invalid` host name, a server that resets the connection, and a TLS server whose
 * self-signed certificate (made at test time with openssl) is not trusted — until
 * `NODE_EXTRA_CA_CERTS` names it, as the message says. For the providers, MCP over HTTP and the
 * cluster's database. All servers listen on 127.0.0.1 and close with their test.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import * as net from "node:net"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { isolatedEnv, runCli, tempDir } from "../support/cliProcess.ts"

interface Context {
  readonly onTestFinished: (fn: () => void | Promise<void>) => void
}

/** A port on 127.0.0.1 that nothing listens on: bound, then closed. */
const closedPort = async (): Promise<number> => {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

const listen = async (server: net.Server, context: Context): Promise<number> => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  context.onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return (server.address() as AddressInfo).port
}

/** A server that accepts the connection, reads the request and resets it (TCP RST). */
const resettingServer = (context: Context) => {
  const sockets = new Set<net.Socket>()
  const server = net.createServer((socket) => {
    sockets.add(socket)
    socket.once("data", () => socket.resetAndDestroy())
  })
  context.onTestFinished(() => sockets.forEach((s) => s.destroy()))
  return listen(server, context)
}

/** A self-signed certificate for 127.0.0.1, made now. */
const selfSigned = (dir: string) => {
  const key = path.join(dir, "key.pem")
  const cert = path.join(dir, "cert.pem")
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert
  ], { stdio: "ignore" })
  return { key: fs.readFileSync(key), cert: fs.readFileSync(cert), certPath: cert }
}

/** An HTTPS server with that certificate that refuses every request with a 401 it can be recognised by. */
const tlsServer = async (dir: string, context: Context) => {
  const { key, cert, certPath } = selfSigned(dir)
  const server = https.createServer({ key, cert }, (request, response) => {
    request.resume()
    response.writeHead(401, { "content-type": "application/json" })
    response.end(JSON.stringify({ error: { message: "reached over TLS", type: "invalid_api_key" } }))
  })
  server.keepAliveTimeout = 100
  context.onTestFinished(() => server.closeAllConnections())
  return { port: await listen(server, context), certPath }
}

const setup = () => {
  const home = tempDir()
  return { home, env: isolatedEnv(home) }
}

const runModel = (baseUrl: string, env: Record<string, string>, home: string) =>
  runCli(["run", "--base-url", baseUrl, "--model", "m", "--workspace", home, "--no-settings", "hi"], { env })

/** The last line the CLI printed: its one-line failure. */
const lastLine = (stderr: string) => stderr.trimEnd().split("\n").at(-1)

describe.concurrent("a failed connection names its cause", () => {
  it("provider: a closed port is a refused connection, with host and port", async () => {
    const { home, env } = setup()
    const port = await closedPort()
    const result = await runModel(`http://127.0.0.1:${port}/v1`, env, home)
    expect(result.code).toBe(1)
    expect(lastLine(result.stderr)).toBe(
      `agent-loop: ProviderUnavailable: Request failed (POST http://127.0.0.1:${port}/v1/chat/completions): ` +
        `connection refused by 127.0.0.1:${port} (is the server running, and is the port right?)`
    )
    expect(result.stderr).not.toContain("Transport error")
  })

  it("provider: an unknown host name is a DNS failure", async () => {
    const { home, env } = setup()
    const result = await runModel("http://no-such-host.invalid:8080/v1", env, home)
    expect(result.code).toBe(1)
    expect(lastLine(result.stderr)).toBe(
      "agent-loop: ProviderUnavailable: Request failed (POST http://no-such-host.invalid:8080/v1/chat/completions): " +
        "DNS name not found: no-such-host.invalid:8080"
    )
  })

  it("provider: a server that resets the connection", async (context) => {
    const { home, env } = setup()
    const port = await resettingServer(context)
    const result = await runModel(`http://127.0.0.1:${port}/v1`, env, home)
    expect(result.code).toBe(1)
    expect(lastLine(result.stderr)).toBe(
      `agent-loop: ProviderUnavailable: Request failed (POST http://127.0.0.1:${port}/v1/chat/completions): ` +
        `connection to 127.0.0.1:${port} was reset (closed by the server or a proxy)`
    )
  })

  it("provider: an untrusted certificate is not retried and names NODE_EXTRA_CA_CERTS, which then makes it trusted", async (context) => {
    const { home, env } = setup()
    const { port, certPath } = await tlsServer(home, context)
    const untrusted = await runModel(`https://127.0.0.1:${port}/v1`, env, home)
    expect(untrusted.code).toBe(1)
    expect(untrusted.stderr).not.toContain("retry")
    expect(lastLine(untrusted.stderr)).toMatch(new RegExp(
      `^agent-loop: ProviderRejected: Request failed \\(POST https://127\\.0\\.0\\.1:${port}/v1/chat/completions\\): ` +
        `TLS certificate of 127\\.0\\.0\\.1:${port} not trusted \\(DEPTH_ZERO_SELF_SIGNED_CERT: self[- ]signed certificate\\); ` +
        `a private certificate authority can be added with NODE_EXTRA_CA_CERTS=FILE\\.pem$`
    ))
    // the advice works: with the certificate trusted, the request reaches the server
    const trusted = await runModel(`https://127.0.0.1:${port}/v1`, { ...env, NODE_EXTRA_CA_CERTS: certPath }, home)
    expect(trusted.code).toBe(1)
    expect(lastLine(trusted.stderr)).toBe("agent-loop: ProviderRejected: reached over TLS")
  })

  it("MCP over HTTP: a refused server and an unknown host are each one warning naming the cause", async () => {
    const { home, env } = setup()
    const port = await closedPort()
    const config = path.join(home, "mcp.json")
    fs.writeFileSync(config, JSON.stringify({
      mcpServers: { closed: { type: "http", url: `http://127.0.0.1:${port}/mcp` }, nowhere: { type: "http", url: "http://mcp.invalid/mcp" } }
    }))
    // the model's port is closed too: the run fails after the MCP warnings, which is all this looks at
    const result = await runCli(["run", "--base-url", `http://127.0.0.1:${port}/v1`, "--model", "m", "--workspace", home, "--no-settings",
      "--mcp-config", config, "hi"], { env })
    expect(result.stderr).toContain(
      `agent-loop: warn: MCP server "closed" failed to start: MCP HTTP request failed: connection refused by 127.0.0.1:${port} ` +
        "(is the server running, and is the port right?); skipped"
    )
    expect(result.stderr).toContain(
      "agent-loop: warn: MCP server \"nowhere\" failed to start: MCP HTTP request failed: DNS name not found: mcp.invalid:80; skipped"
    )
  })

  it("cluster: a database that cannot be reached is a one-line failure naming the cause, not an internal error", async () => {
    const { env } = setup()
    const port = await closedPort()
    // the URL in the variable: on the command line, its password would add a hint line
    const refused = await runCli(["run", "hi"], { env: { ...env, AGENT_LOOP_CLUSTER_URL: `postgres://agent:secret-pw@127.0.0.1:${port}/agents` } })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toBe(
      `agent-loop: the cluster's database postgres://agent:***@127.0.0.1:${port}/agents cannot be reached: ` +
        `connection refused by 127.0.0.1:${port} (is the server running, and is the port right?)\n`
    )
    const unknown = await runCli(["run", "--cluster", "postgres://agent@db.invalid/agents", "hi"], { env })
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toBe(
      "agent-loop: the cluster's database postgres://agent@db.invalid/agents cannot be reached: DNS name not found: db.invalid:5432\n"
    )
  })
})
