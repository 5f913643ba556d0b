/**
 * One request to a provider under test, over Node's HTTP client: the chunks it streams, or the
 * error it fails with when its server answers a scripted response, checked to carry the API key
 * nowhere.
 */
import { NodeHttpClient } from "@effect/platform-node"
import { expect } from "@effect/vitest"
import { Effect, Stream } from "effect"
import type { ProviderShape, ProviderTypes } from "effect-agent-loop"
import { start, type WireResponse } from "./wireServer.ts"

/** Every chunk that the provider `make` builds streams for `request`. */
export const chunksOf = <E, R>(make: Effect.Effect<ProviderShape, E, R>, request: ProviderTypes.ProviderRequest) =>
  Effect.flatMap(make, (provider) => Stream.runCollect(provider.stream(request))).pipe(Effect.provide(NodeHttpClient.layerUndici))

/**
 * The error `call` (a request to the server at a URL) fails with when the server answers
 * `response`; neither the error's JSON nor its message may show `key`.
 */
export const failureOf = <A, E, R>(key: string, call: (url: string) => Effect.Effect<A, E, R>, response: WireResponse) =>
  Effect.gen(function*() {
    const server = yield* start([response])
    const error = yield* Effect.flip(call(server.url))
    expect(JSON.stringify(error)).not.toContain(key)
    expect(String(error)).not.toContain(key)
    return error
  })
