/**
 * A persisted request delivered twice to one runner while its first delivery is still being handled
 * (Effect Cluster redelivers when it restarts an interrupted entity): the second joins the first, so
 * the turn runs once and both deliveries answer with its result. The session entity's handlers are
 * built in-process on the public `AgentLoopCluster.layerEntity`, over the test kit's loop and an
 * Postgres cluster database; the deliveries are handed to the `Turn` handler directly, with
 * the same request id, as Effect Cluster hands them (a `Send` delivered again after its `Accepted`). The cluster database is a real Postgres: its
 * claim is a round trip, during which the second delivery arrives.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Option, Scope, Stream } from "effect"
import { Entity, EntityAddress, EntityId, RunnerAddress, Sharding, ShardId } from "effect/cluster"
import { AgentLoopCluster } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import * as Postgres from "../support/postgres.ts"

const database = Postgres.layerClient().pipe(Layer.provide(Postgres.layer), Layer.orDie)

/** The handlers the entity layer registers for one session, built as a runner builds them. */
const handlersOf = (sessionKey: string) =>
  Effect.gen(function*() {
    let build: Effect.Effect<unknown, never, never> | undefined
    const sharding = Sharding.Sharding.of({
      ...({} as Sharding.Sharding["Service"]),
      registerEntity: (_entity, handlers) =>
        Effect.contextWith((context: Context.Context<never>) => {
          build = Effect.provideContext(handlers as Effect.Effect<unknown>, context)
          return Effect.void
        })
    })
    yield* Layer.build(AgentLoopCluster.layerEntity.pipe(Layer.provide(Layer.succeed(Sharding.Sharding)(sharding))))
    const scope = yield* Effect.scope
    const address = EntityAddress.make({ entityType: AgentLoopCluster.AgentSession.type, entityId: EntityId.make(sessionKey), shardId: ShardId.make("default", 1) })
    const handlers = yield* build!.pipe(
      Effect.provideService(Entity.CurrentAddress, address),
      Effect.provideService(Entity.CurrentRunnerAddress, RunnerAddress.make("localhost", 3000)),
      Effect.provideService(Scope.Scope, scope)
    )
    return handlers as {
      readonly Turn: (request: unknown) => Effect.Effect<{ readonly result: { readonly status: string; readonly turnId: string }; readonly lost: boolean }>
      readonly Send: (request: unknown) => Stream.Stream<{ readonly _tag: string; readonly lost?: boolean; readonly outbound?: { readonly content: string } }>
    }
  })

/** A delivery of a `Turn` request, with the fields the entity reads. */
const delivery = (requestId: bigint, input: string) => ({ requestId, payload: { input }, lastSentChunk: Option.none(), lastSentChunkValue: Option.none() })

/** A delivery of a `Send` request; `after` is the last chunk the cluster stored for it (a redelivery). */
const sending = (requestId: bigint, content: string, after?: { readonly _tag: string }) => ({
  requestId,
  payload: { content },
  lastSentChunk: Option.none(),
  lastSentChunkValue: after === undefined ? Option.none() : Option.some(after)
})

describe.skipIf(!Postgres.postgresProbe.ok)(Postgres.postgresSuite("a request delivered twice to one runner"), () => {
  it.live("the second delivery joins the first: one turn, one model call, the same result for both", () =>
    Effect.gen(function*() {
      const handlers = yield* handlersOf("twice")
      const first = yield* Effect.forkChild(handlers.Turn(delivery(7n, "hi")))
      const second = yield* Effect.forkChild(handlers.Turn(delivery(7n, "hi")))
      const [a, b] = [yield* Fiber.join(first), yield* Fiber.join(second)]
      expect([a.result.status, a.lost]).toEqual(["completed", false])
      expect(b).toEqual(a)
      expect(yield* Testing.requests).toHaveLength(1)
    }).pipe(
      Effect.scoped,
      Effect.provide(Testing.layer({ script: [{ content: "hello", delay: "200 millis" }] }).pipe(Layer.provideMerge(database)))
    ))

  it.live("a Send delivered again while its turn runs gets that turn's reply, not a lost one; the turn runs once", () =>
    Effect.gen(function*() {
      const handlers = yield* handlersOf("routed-twice")
      const first = yield* Effect.forkChild(Stream.runCollect(handlers.Send(sending(8n, "hi"))))
      // delivered again after its `Accepted` was stored, as Effect Cluster does for a restarted entity
      const second = yield* Effect.forkChild(Stream.runCollect(handlers.Send(sending(8n, "hi", { _tag: "Accepted" }))))
      const [a, b] = [yield* Fiber.join(first), yield* Fiber.join(second)]
      expect(a.map((chunk) => chunk._tag)).toEqual(["Accepted", "Replied"])
      expect(a[1]).toMatchObject({ lost: false, outbound: { content: "hello" } })
      expect(b).toEqual([a[1]])
      expect(yield* Testing.requests).toHaveLength(1)
    }).pipe(
      Effect.scoped,
      Effect.provide(Testing.layer({ script: [{ content: "hello", delay: "200 millis" }] }).pipe(Layer.provideMerge(database)))
    ))
})
