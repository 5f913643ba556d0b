import { NodeFileSystem, NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, FileSystem, Layer, Redacted, Stream } from "effect"
import { Message, OpenAiCompatible, Provider, type ProviderTypes, Replay } from "effect-agent-loop"
import { isMismatch, recordedRequest } from "../../src/layers/providers/Replay.ts"
import { openAiText, openAiTextChunks, openAiTools, openAiToolsChunks } from "../support/wireFixtures.ts"
import { bytesEvery, start } from "../support/wireServer.ts"

const tools = [{ name: "read_file", description: "Reads", parameters: { type: "object" } }]
const first: ProviderTypes.ProviderRequest = { model: "gpt-4o", messages: [Message.system("S"), Message.user("hi")], tools }
const second: ProviderTypes.ProviderRequest = { ...first, messages: [...first.messages, Message.assistant("Grüße"), Message.user("read it")] }
const third: ProviderTypes.ProviderRequest = { ...second, messages: [...second.messages, Message.user("again")] }

const run = (request: ProviderTypes.ProviderRequest) =>
  Effect.gen(function*() {
    const provider = yield* Provider
    return yield* Stream.runCollect(provider.stream(request))
  })

describe("Replay", () => {
  it.live("records a live run to a JSONL cassette, then replays it with the server gone", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped()
      const cassette = `${dir}/run.jsonl`
      const server = yield* start([
        { body: bytesEvery(openAiText, 9) },
        { body: bytesEvery(openAiTools, 13) },
        { status: 503, body: [JSON.stringify({ error: { message: "overloaded", type: "server_error", code: null } })] }
      ])
      const recording = Replay.record(cassette, { fresh: true }).pipe(
        Layer.provide(OpenAiCompatible.layer({ baseUrl: server.url, apiKey: Redacted.make("sk-rec") })),
        Layer.provide(NodeHttpClient.layerUndici)
      )
      const live = yield* Effect.gen(function*() {
        return [yield* run(first), yield* run(second), yield* Effect.flip(run(third))] as const
      }).pipe(Effect.provide(recording))
      expect(live[0]).toEqual(openAiTextChunks)
      expect(live[1]).toEqual(openAiToolsChunks)
      expect(live[2]).toMatchObject({ _tag: "ProviderUnavailable", status: 503 })
      yield* server.close

      const lines = (yield* fs.readFileString(cassette)).trim().split("\n")
      expect(lines).toHaveLength(3)
      const parsed = lines.map((line) => JSON.parse(line))
      expect(parsed[0].request).toEqual({ model: "gpt-4o", messages: first.messages, tools: ["read_file"] })
      expect(parsed[2].error).toEqual({ _tag: "ProviderUnavailable", message: "overloaded", status: 503 })
      expect(lines.join("\n")).not.toContain("sk-rec")

      const replayed = yield* Effect.gen(function*() {
        return [yield* run(first), yield* run(second), yield* Effect.flip(run(third)), yield* Effect.flip(run(third))] as const
      }).pipe(Effect.provide(Replay.replay(cassette)))
      expect(replayed[0]).toEqual(live[0])
      expect(replayed[1]).toEqual(live[1])
      expect(replayed[2]).toEqual(live[2])
      expect(replayed[3]._tag).toBe("ProviderRejected")
      expect(replayed[3].message).toContain("call #4 is extra")
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.effect("a request that is not the next recorded one fails naming both", () =>
    Effect.gen(function*() {
      const provider = yield* Replay.fromEntries([
        { request: recordedRequest(first), chunks: [{ _tag: "TextDelta", text: "a" }, { _tag: "Finish", reason: "stop" }] },
        { request: recordedRequest(second), chunks: [{ _tag: "Finish", reason: "stop" }] }
      ], "demo.jsonl")
      const wrongModel = yield* Effect.flip(Stream.runCollect(provider.stream({ ...first, model: "claude-sonnet-4-5" })))
      expect(wrongModel._tag).toBe("ProviderRejected")
      expect(isMismatch(wrongModel)).toBe(true)
      expect(wrongModel.message).toContain("model: expected gpt-4o, got claude-sonnet-4-5")
      expect(wrongModel.message).toContain("Recorded: model gpt-4o")
      expect(wrongModel.message).toContain("Requested: model claude-sonnet-4-5")
      const wrongMessage = yield* Effect.flip(Stream.runCollect(provider.stream({ ...second, messages: [...first.messages, Message.user("bye")] })))
      expect(wrongMessage.message).toContain("call #2 of demo.jsonl differs in messages[2]")
      expect(wrongMessage.message).toContain("\"Grüße\"")
      expect(wrongMessage.message).toContain("\"bye\"")
    }))

  it.effect("tool names are part of the match; key order of messages is not", () =>
    Effect.gen(function*() {
      const entries = [{ request: recordedRequest(first), chunks: [{ _tag: "Finish", reason: "stop" }] } as const]
      const ok = yield* Replay.fromEntries(entries)
      const reordered = { ...first, messages: [{ content: "S", role: "system" } as const, { content: "hi", role: "user" } as const] }
      expect(yield* Stream.runCollect(ok.stream(reordered))).toEqual([{ _tag: "Finish", reason: "stop" }])
      const other = yield* Replay.fromEntries(entries)
      const error = yield* Effect.flip(Stream.runCollect(other.stream({ ...first, tools: [] })))
      expect(error.message).toContain("tools: expected [read_file], got []")
    }))

  it.effect("matching is by JSON value: an undefined field equals an absent one, a nested difference is found", () =>
    Effect.gen(function*() {
      const call = { id: "c1", name: "read_file", arguments: "{\"path\":\"a\"}" }
      const withCall: ProviderTypes.ProviderRequest = { ...first, messages: [...first.messages, Message.assistant("", [call])] }
      const entries = [{ request: recordedRequest(withCall), chunks: [{ _tag: "Finish", reason: "stop" }] } as const]
      const withUndefined = { ...withCall, messages: [...first.messages, { role: "assistant", content: "", toolCalls: [call], extra: undefined } as Message.Message] }
      expect(yield* Stream.runCollect((yield* Replay.fromEntries(entries)).stream(withUndefined))).toEqual([{ _tag: "Finish", reason: "stop" }])
      const changed = { ...withCall, messages: [...first.messages, Message.assistant("", [{ ...call, arguments: "{\"path\":\"b\"}" }])] }
      const error = yield* Effect.flip(Stream.runCollect((yield* Replay.fromEntries(entries)).stream(changed)))
      expect(error.message).toContain("differs in messages[2]")
      expect(error.message).toContain("\"arguments\":\"{\\\"path\\\":\\\"b\\\"}\"")
      const fewer = yield* Effect.flip(Stream.runCollect((yield* Replay.fromEntries(entries)).stream(first)))
      expect(fewer.message).toContain("messages[2]: expected {")
      expect(fewer.message).toContain("got nothing")
    }))

  it.live("an unreadable cassette fails the layer with the line number", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped()
      yield* fs.writeFileString(`${dir}/bad.jsonl`, `${JSON.stringify({ request: recordedRequest(first), chunks: [] })}\n{"request":\n`)
      const error = yield* Effect.flip(Layer.build(Replay.replay(`${dir}/bad.jsonl`)))
      expect(error).toMatchObject({ _tag: "ConfigError", field: "cassette", message: expect.stringContaining("bad.jsonl:2") })
      const missing = yield* Effect.flip(Layer.build(Replay.replay(`${dir}/none.jsonl`)))
      expect(missing._tag).toBe("ConfigError")
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})
