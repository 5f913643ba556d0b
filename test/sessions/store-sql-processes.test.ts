/**
 * The SQL store across OS processes, on one SQLite file and on a real Postgres (skipped, saying why,
 * where Postgres is not installed): two processes appending 200 times each to one session lose
 * nothing and interleave whole appends only; a process killed inside a transaction leaves the
 * session as it was, and the next writer is not blocked by it.
 *
 * The children (`support/sqlStoreChild.ts`) are scoped: killed when the test ends however it ends,
 * and they exit by themselves when their stdin (a pipe from this process) closes.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { NodeServices } from "@effect/platform-node"
import { Effect, Option, Stream } from "effect"
import { ChildProcess } from "effect/process"
import * as NodePath from "node:path"
import { Message, SessionLog } from "effect-agent-loop"
import { root } from "../support/cliProcess.ts"
import { type PostgresServer, postgresProbe, postgresSuite, startPostgres } from "../support/postgres.ts"
import { type Backend, type Database, openStore, postgres, sqlite } from "../support/sqlBackends.ts"

const child = NodePath.join(root, "test", "support", "sqlStoreChild.ts")

/** Starts the child in `mode` for the scope. */
const spawnChild = (db: Database, mode: "append" | "crash", env: Record<string, string>) =>
  ChildProcess.make(process.execPath, [child, mode], { cwd: root, env: { ...db.env, ...env }, extendEnv: true })

/** Runs the child to its end: its exit code and stderr. */
const runChild = (db: Database, env: Record<string, string>) =>
  Effect.scoped(Effect.gen(function*() {
    const handle = yield* spawnChild(db, "append", env)
    const [stderr, code] = yield* Effect.all([Stream.mkString(Stream.decodeText(handle.stderr)), handle.exitCode], { concurrency: 2 })
    return { code: Number(code), stderr }
  }))

const APPENDS = 200

const processes = (backend: Backend) => {
  it.live(`2 processes × ${APPENDS} appends to one session: nothing lost, whole appends only, each process's in order`, () =>
    Effect.scoped(Effect.gen(function*() {
      const db = yield* backend.fresh
      const store = yield* openStore(db)
      yield* store.append("shared", [Message.system("start")])
      const results = yield* Effect.forEach(["p1", "p2"], (tag) =>
        runChild(db, { STORE_KEY: "shared", STORE_TAG: tag, STORE_COUNT: String(APPENDS) }), { concurrency: "unbounded" })
      for (const result of results) expect(result, result.stderr).toMatchObject({ code: 0 })

      const log = (yield* store.log("shared")).map((entry) => SessionLog.isMessage(entry) ? Message.textOf(entry.content) : "")
      expect(log[0]).toBe("start")
      const rest = log.slice(1)
      expect(rest).toHaveLength(2 * 2 * APPENDS)
      for (let i = 0; i < rest.length; i += 2) expect(rest[i + 1]).toBe(rest[i]!.replace(" ", " reply "))
      for (const tag of ["p1", "p2"]) {
        expect(rest.filter((text) => text.startsWith(`${tag} `) && !text.includes("reply"))).toEqual(
          Array.from({ length: APPENDS }, (_, i) => `${tag} ${i}`)
        )
      }
    }).pipe(Effect.provide(NodeServices.layer))), 180_000)

  it.live("a process killed inside a transaction leaves the session as it was; the next append goes through", () =>
    Effect.scoped(Effect.gen(function*() {
      const db = yield* backend.fresh
      const store = yield* openStore(db)
      const before = [Message.user("u1"), Message.assistant("a1")]
      yield* store.append("s", before)
      const handle = yield* spawnChild(db, "crash", { STORE_KEY: "s", STORE_TAG: "lost", STORE_COUNT: "1000" })
      const inside = yield* handle.stdout.pipe(
        Stream.decodeText,
        Stream.splitLines,
        Stream.filter((line) => line === "inside"),
        Stream.runHead
      )
      expect(Option.isSome(inside)).toBe(true)
      yield* handle.kill({ killSignal: "SIGKILL" })
      const killed = yield* Effect.flip(handle.exitCode)
      expect(String(killed.cause)).toContain("SIGKILL")

      const fresh = yield* openStore(db)
      expect(yield* fresh.log("s")).toEqual(before)
      expect(yield* store.log("s")).toEqual(before)
      yield* fresh.append("s", [Message.user("u2")])
      expect(yield* store.log("s")).toEqual([...before, Message.user("u2")])
      expect((yield* store.list).map((info) => ({ key: info.sessionKey, messages: info.messages }))).toEqual([{ key: "s", messages: 3 }])
    }).pipe(Effect.provide(NodeServices.layer))), 60_000)
}

describe("SessionStore.sql on SQLite, across processes", () => processes(sqlite))

describe.skipIf(!postgresProbe.ok)(postgresSuite("SessionStore.sql on Postgres, across processes"), () => {
  let server: PostgresServer | undefined
  beforeAll(async () => {
    server = await startPostgres()
  }, 120_000)
  afterAll(() => server?.stop())
  processes(postgres(() => server!))
})
