/**
 * The throwaway Postgres of the tests (`support/postgres.ts`): it starts on a free loopback port,
 * answers, and leaves nothing behind, even when the process that started it is killed.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import { describe, expect, it } from "vitest"
import { findPostgresBin, postgresProbe, postgresSuite, startPostgres } from "../support/postgres.ts"
import { waitUntil } from "../support/cluster.ts"

const refuses = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port })
    socket.once("connect", () => {
      socket.destroy()
      resolve(false)
    })
    socket.once("error", () => resolve(true))
  })

describe("finding the server binaries", () => {
  it("honours PG_BIN, and says there are none where they are not", () => {
    expect(findPostgresBin({ PG_BIN: "/nonexistent", PATH: "" })).toBeUndefined()
    const found = findPostgresBin({ PATH: "" })
    if (found !== undefined) expect(fs.existsSync(`${found}/initdb`)).toBe(true)
  })
})

describe.skipIf(!postgresProbe.ok)(postgresSuite("a throwaway Postgres server"), () => {
  it("starts on a free loopback port, runs SQL, makes databases, and stops leaving nothing", async () => {
    const pg = await startPostgres()
    try {
      expect(pg.url()).toBe(`postgres://postgres@127.0.0.1:${pg.port}/postgres`)
      expect(await pg.psql("SELECT 40 + 2")).toBe("42")
      await pg.createDatabase("second")
      expect(await pg.psql("SELECT current_database()", "second")).toBe("second")
    } finally {
      await pg.stop()
    }
    expect(await refuses(pg.port)).toBe(true)
    expect(fs.existsSync(pg.dir)).toBe(false)
    await pg.stop()
  })

  it("stops and removes the server when the process that started it is killed", async () => {
    const harness = new URL("../support/postgres.ts", import.meta.url).pathname
    const script = `import { startPostgres } from ${JSON.stringify(harness)}
const pg = await startPostgres()
console.log(JSON.stringify({ port: pg.port, dir: pg.dir }))
setInterval(() => {}, 1000)`
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] })
    let output = ""
    child.stdout.on("data", (chunk) => (output += chunk))
    await waitUntil("the child's server to start", () => output.includes("\n"), 60_000)
    const { port, dir } = JSON.parse(output) as { port: number; dir: string }
    expect(await refuses(port)).toBe(false)
    child.kill("SIGKILL")
    await waitUntil("the orphaned server to stop", () => refuses(port))
    await waitUntil("its directory to be removed", () => !fs.existsSync(dir))
  })
})
