/**
 * The SQL session store when the connection to Postgres is lost at an exact point of an append's
 * transaction (a proxy cuts it: `cuttingProxy.ts`): the append is made again on a new connection
 * and the log holds it once, whether the cut fell inside the transaction (nothing was written,
 * and the driver's failed `ROLLBACK` on the dead connection is not a defect) or just after its
 * `COMMIT` was applied but before it was acknowledged (the retry finds it was written).
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { Message } from "effect-agent-loop"
import { type CuttingProxy, type CutPoint, startCuttingProxy } from "../support/cuttingProxy.ts"
import { type PostgresServer, postgresProbe, postgresSuite, startPostgres } from "../support/postgres.ts"
import { openStore } from "../support/sqlBackends.ts"

describe.skipIf(!postgresProbe.ok)(postgresSuite("SessionStore.sql when the connection is lost under an append"), () => {
  let server: PostgresServer | undefined
  let proxy: CuttingProxy | undefined
  let databases = 0
  beforeAll(async () => {
    server = await startPostgres()
    proxy = await startCuttingProxy(server.port)
  }, 120_000)
  afterAll(async () => {
    await proxy?.close()
    await server?.stop()
  })

  /** A fresh database, the store on it through the proxy (the session "s" holds one message), and one reached directly. */
  const stores = Effect.gen(function*() {
    const name = `lost_${process.pid}_${++databases}`
    yield* Effect.promise(() => server!.createDatabase(name))
    const through = yield* openStore({ client: PgClient.layer({ url: Redacted.make(`postgres://postgres@127.0.0.1:${proxy!.port}/${name}`) }), env: {} })
    yield* through.append("s", [Message.user("first")])
    const direct = yield* openStore({ client: PgClient.layer({ url: Redacted.make(server!.url(name)) }), env: {} })
    return { through, direct }
  })

  const cutAt = (statement: string, point: CutPoint) =>
    Effect.scoped(Effect.gen(function*() {
      const { direct, through } = yield* stores
      const cutsBefore = proxy!.cuts()
      proxy!.arm(statement, point)
      yield* through.append("s", [Message.user("second"), Message.assistant("answer")])
      expect(proxy!.cuts()).toBe(cutsBefore + 1)
      const texts = (yield* direct.log("s")).map((entry) => entry.role === "user" || entry.role === "assistant" ? Message.textOf(entry.content) : entry.role)
      expect(texts).toEqual(["first", "second", "answer"])
      // the store that was cut reads the same (its cache did not grow twice, nor stay behind)
      expect((yield* through.log("s")).length).toBe(3)
    }))

  it.live("cut inside the transaction, before its rows are sent: retried, stored once", () =>
    cutAt("INSERT INTO agent_loop_entries", "before"), 60_000)

  it.live("cut after COMMIT was applied, before it was acknowledged: retried, found written, stored once", () =>
    cutAt("COMMIT", "after"), 60_000)
})
