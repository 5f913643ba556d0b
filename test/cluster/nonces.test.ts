/**
 * The nonces of signed cluster requests (`cluster/nonces.ts`, internal), on an embedded SQLite
 * database (the SQL the runners send to Postgres): a request is admitted once, again while it is
 * still claimed (delivered again after its runner stopped), and never as a copy under another id,
 * nor under its own once it was answered and its claim swept, nor once too old.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { NodeSqliteClient } from "effect-agent-loop"
import * as Claims from "../../src/cluster/claims.ts"
import * as Nonces from "../../src/cluster/nonces.ts"

const database = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-loop-nonces-"))
  return NodeSqliteClient.layer({ filename: path.join(dir, "cluster.db") }).pipe(Layer.orDie)
}

describe("nonces of signed requests", () => {
  it.effect("admitted once, again while claimed; a copy, an answered one stored again, an old one are refused", () =>
    Effect.gen(function*() {
      const claims = yield* Claims.make
      const nonces = yield* Nonces.make
      const now = 1_000_000_000_000
      expect(yield* nonces.admit("n1", "r1", now, now)).toBe("admitted")
      yield* claims.claim("r1", "s", now)
      // delivered again after its runner stopped: the same id, still claimed
      expect(yield* nonces.admit("n1", "r1", now, now + 1000)).toBe("admitted")
      // the same signed request stored under another id
      expect(yield* nonces.admit("n1", "r2", now, now + 1000)).toBe("copied")
      // answered, and its claim swept by the retention window: stored again under its own id
      const sql = yield* SqlClient.SqlClient
      yield* sql`DELETE FROM ${sql(Claims.TABLE)} WHERE request_id = 'r1'`.pipe(Effect.orDie)
      expect(yield* nonces.admit("n1", "r1", now, now + 2000)).toBe("replayed")
      // made more than MAX_AGE ago, whatever its nonce
      expect(yield* nonces.admit("n2", "r3", now, now + Duration.toMillis(Nonces.MAX_AGE) + 1)).toBe("expired")
      expect(Nonces.refusal("replayed")).toBe("the request was answered already: stored again, it does not run again")
    }).pipe(Effect.provide(database())))

  it.effect("swept by the retention window: a nonce made before the horizon is forgotten, and a request made before it is refused", () =>
    Effect.gen(function*() {
      yield* Claims.make
      const nonces = yield* Nonces.make
      const sql = yield* SqlClient.SqlClient
      const now = 1_000_000_000_000
      expect(yield* nonces.admit("old", "r1", now - 60_000, now)).toBe("admitted")
      expect(yield* nonces.admit("new", "r2", now, now)).toBe("admitted")
      // the window's start, a minute ago less a moment: the older nonce goes, the newer stays
      yield* nonces.sweep(now, now - 30_000)
      const kept = yield* sql<{ readonly nonce: string }>`SELECT nonce FROM ${sql(Nonces.TABLE)}`.pipe(Effect.orDie)
      expect(kept.map((row) => row.nonce)).toEqual(["new"])
      // a copy of the forgotten request, under any id: refused, not admitted afresh
      expect(yield* nonces.admit("old", "r9", now - 60_000, now + 1000)).toBe("forgotten")
      expect(yield* nonces.admit("other", "r8", now - 31_000, now + 1000)).toBe("forgotten")
      // the horizon never moves back
      yield* nonces.sweep(now, now - 90_000)
      expect(yield* nonces.admit("old", "r9", now - 60_000, now + 1000)).toBe("forgotten")
      expect(yield* nonces.admit("fresh", "r3", now - 1000, now + 1000)).toBe("admitted")
      expect(Nonces.refusal("forgotten")).toMatch(/^the request was made before the oldest request the runners still keep/)
    }).pipe(Effect.provide(database())))
})
