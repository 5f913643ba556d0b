/**
 * OpenTelemetry export from the real CLI: `agent-loop run` over the demo cassette, with the
 * `OTEL_*` variables pointing at a loopback OTLP/HTTP receiver this test starts, which checks the
 * spans (with their GenAI attributes), a metric and a log, in JSON and in protobuf.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import protobuf from "protobufjs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fromEnv } from "../../src/cli/runtime/telemetry.ts"
import { isolatedEnv, root, runCli, tempDir } from "../support/cliProcess.ts"
import { start as startModel } from "../support/openaiServer.ts"
import { jsonAttributes, jsonSpans, type Received, type SpanView, startReceiver } from "../support/otlpReceiver.ts"

/** The parts of the OTLP trace protobuf (opentelemetry-proto, trace/v1 and common/v1) the test reads. */
const traceProto = protobuf.parse(`
syntax = "proto3";
message AnyValue { oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; } }
message KeyValue { string key = 1; AnyValue value = 2; }
message Resource { repeated KeyValue attributes = 1; }
message Span { bytes trace_id = 1; bytes span_id = 2; bytes parent_span_id = 4; string name = 5; repeated KeyValue attributes = 9; }
message ScopeSpans { repeated Span spans = 2; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
`).root.lookupType("ExportTraceServiceRequest")

const protobufSpans = (bodies: ReadonlyArray<Received>) =>
  bodies.flatMap((r) => {
    const data = traceProto.toObject(traceProto.decode(r.body), { longs: Number, bytes: String, oneofs: false }) as any
    return (data.resourceSpans ?? []).flatMap((rs: any) =>
      (rs.scopeSpans ?? []).flatMap((ss: any) =>
        (ss.spans ?? []).map((s: any): SpanView & { resource: Record<string, unknown> } => {
          const attrs = (list: Array<any> = []) =>
            Object.fromEntries(list.map((kv) => [kv.key, kv.value.stringValue ?? kv.value.intValue ?? kv.value.doubleValue ?? kv.value.boolValue]))
          const hex = (b64: string | undefined) => Buffer.from(b64 ?? "", "base64").toString("hex")
          return { traceId: hex(s.traceId), spanId: hex(s.spanId), parentSpanId: hex(s.parentSpanId), name: s.name, attributes: attrs(s.attributes), resource: attrs(rs.resource?.attributes) }
        })
      )
    )
  })

const demoPrompt = "What is in this workspace, and what is the project about?"
const demoArgs = ["run", "--replay", path.join(root, "examples", "demo.cassette.jsonl"), "--workspace", path.join(root, "examples", "demo-workspace"),
  "--tools", "list_dir,read_file", "--no-settings", "--no-context-files", demoPrompt]

/** A home whose user hooks hold a bad `HOOK.md`: the CLI logs a warning for it, the log the receiver must get. */
const homeWithBadHook = () => {
  const home = tempDir()
  const hook = path.join(home, "config", "agents", "hooks", "bad")
  fs.mkdirSync(hook, { recursive: true })
  fs.writeFileSync(path.join(hook, "HOOK.md"), "---\nevents: [nonsense]\n---\n")
  return home
}

const secretHeader = "s3cr3t-otlp-token"

describe("OpenTelemetry export from the CLI", () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>
  beforeAll(async () => {
    receiver = await startReceiver()
  })
  afterAll(() => receiver?.close())

  const runWith = async (extra: Record<string, string>) => {
    receiver.received.length = 0
    const result = await runCli(demoArgs, { env: isolatedEnv(homeWithBadHook(), { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, ...extra }) })
    expect(result.code, result.stderr).toBe(0)
    return [...receiver.received]
  }

  it("http/json: the turn's spans with GenAI attributes, its metrics and a log reach the receiver before the CLI exits", async () => {
    const received = await runWith({
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_HEADERS: `x-collector-token=${secretHeader}`,
      OTEL_SERVICE_NAME: "agent-test",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=ci"
    })
    for (const r of received) {
      expect(r.contentType).toBe("application/json")
      expect(r.headers["x-collector-token"]).toBe(secretHeader)
      expect(r.body.toString("utf8")).not.toContain(secretHeader)
    }

    const spans = jsonSpans(received.filter((r) => r.path === "/v1/traces"))
    const turn = spans.find((s) => s.name === "invoke_agent agent-loop")!
    expect(turn).toBeDefined()
    expect(turn.resource).toMatchObject({ "service.name": "agent-test", "deployment.environment": "ci" })
    expect(turn.attributes).toMatchObject({ "gen_ai.operation.name": "invoke_agent", "gen_ai.request.model": "demo-model" })
    const chats = spans.filter((s) => s.name === "chat demo-model")
    expect(chats).toHaveLength(3)
    for (const chat of chats) {
      expect(chat.traceId).toBe(turn.traceId)
      expect(chat.parentSpanId).toBe(turn.spanId)
      expect(chat.attributes).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.request.model": "demo-model" })
      // a model call is a CLIENT span (OTLP's kind 3), ended OK (status 1)
      expect([chat.kind, chat.statusCode]).toEqual([3, 1])
      expect(typeof chat.attributes["gen_ai.usage.input_tokens"]).toBe("number")
    }
    expect(chats.reduce((sum, c) => sum + (c.attributes["gen_ai.usage.input_tokens"] as number), 0)).toBe(330)
    const tools = spans.filter((s) => s.name.startsWith("execute_tool "))
    expect(tools.map((s) => s.attributes["gen_ai.tool.name"]).sort()).toEqual(expect.arrayContaining(["list_dir", "read_file"]))
    expect(tools.map((s) => s.name)).toEqual(expect.arrayContaining(["execute_tool list_dir", "execute_tool read_file"]))
    expect(tools.every((s) => s.traceId === turn.traceId)).toBe(true)

    const metrics = received.filter((r) => r.path === "/v1/metrics").map((r) => JSON.parse(r.body.toString("utf8")))
    const points = metrics.flatMap((m: any) => m.resourceMetrics.flatMap((rm: any) => rm.scopeMetrics.flatMap((sm: any) => sm.metrics)))
    const turns = points.filter((m: any) => m.name === "agent_loop_turns_total").at(-1)
    expect(turns.sum.isMonotonic).toBe(true)
    expect(turns.unit).toBe("{turn}")
    expect(turns.sum.dataPoints.map((p: any) => [jsonAttributes(p.attributes), p.asDouble ?? Number(p.asInt)])).toEqual([[{ status: "completed", depth: "0", unit: "{turn}" }, 1]])
    const iterations = points.filter((m: any) => m.name === "agent_loop_iterations_total").at(-1)
    expect(iterations.sum.dataPoints[0].asDouble ?? Number(iterations.sum.dataPoints[0].asInt)).toBe(3)

    const logs = received.filter((r) => r.path === "/v1/logs").map((r) => JSON.parse(r.body.toString("utf8")))
    const records = logs.flatMap((l: any) => l.resourceLogs.flatMap((rl: any) => rl.scopeLogs.flatMap((sl: any) => sl.logRecords)))
    expect(records.some((r: any) => r.severityNumber === 13 && String(r.body.stringValue).includes("file hook skipped"))).toBe(true)
  })

  it("http/protobuf (the default): the same spans, decoded from the wire format", async () => {
    const received = await runWith({})
    expect(new Set(received.map((r) => r.path))).toEqual(new Set(["/v1/traces", "/v1/metrics", "/v1/logs"]))
    for (const r of received) {
      expect(r.contentType).toBe("application/x-protobuf")
      expect(r.body.length).toBeGreaterThan(0)
    }
    const spans = protobufSpans(received.filter((r) => r.path === "/v1/traces"))
    const turn = spans.find((s) => s.name === "invoke_agent agent-loop")!
    expect(turn.resource["service.name"]).toBe("agent-loop")
    expect(turn.attributes["gen_ai.request.model"]).toBe("demo-model")
    const chats = spans.filter((s) => s.name === "chat demo-model")
    expect(chats).toHaveLength(3)
    expect(chats.every((c) => c.traceId === turn.traceId && c.parentSpanId === turn.spanId && c.traceId.length === 32)).toBe(true)
    expect(chats.reduce((sum, c) => sum + Number(c.attributes["gen_ai.usage.input_tokens"]), 0)).toBe(330)
  })

  it("an OpenAI-compatible model: the chat span names the response's id and model; metrics in seconds and tokens with their units; the SQLite store's statements make no spans", async () => {
    const model = await startModel([{ toolCalls: [{ name: "list_dir", arguments: { path: "." } }], usage: { prompt: 12, completion: 3 } }, { text: "done", usage: { prompt: 20, completion: 5 } }])
    try {
      receiver.received.length = 0
      const home = tempDir()
      const args = ["run", "--base-url", model.url, "--model", "m", "--workspace", home, "--store", "sqlite", "--tools", "list_dir", "--no-settings", "--no-context-files", "hi"]
      const result = await runCli(args, { env: isolatedEnv(home, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" }) })
      expect(result.code, result.stderr).toBe(0)
      const received = [...receiver.received]
      const spans = jsonSpans(received.filter((r) => r.path === "/v1/traces"))
      const chats = spans.filter((s) => s.name === "chat m")
      expect(chats).toHaveLength(2)
      for (const chat of chats) {
        // the fake server answers as Chat Completions does: its id and the model that answered on every chunk
        expect(chat.attributes).toMatchObject({ "gen_ai.response.id": "chatcmpl-fake", "gen_ai.response.model": "fake", "gen_ai.provider.name": "openai" })
      }
      // one trace: the turn and its steps, no statement spans of the store in it or beside it
      const turn = spans.find((s) => s.name === "invoke_agent agent-loop")!
      expect(spans.filter((s) => s.traceId !== turn.traceId).map((s) => s.name)).toEqual([])
      expect(spans.map((s) => s.name).filter((n) => /sql|sqlite|Migrator/i.test(n))).toEqual([])

      const metrics = received.filter((r) => r.path === "/v1/metrics").map((r) => JSON.parse(r.body.toString("utf8")))
      const all = metrics.flatMap((m: any) => m.resourceMetrics.flatMap((rm: any) => rm.scopeMetrics.flatMap((sm: any) => sm.metrics)))
      const last = (name: string) => all.filter((m: any) => m.name === name).at(-1)
      const units = Object.fromEntries(all.map((m: any) => [m.name, m.unit]))
      expect(units).toMatchObject({
        "gen_ai.client.token.usage": "{token}",
        "gen_ai.client.operation.duration": "s",
        agent_loop_turn_duration_seconds: "s",
        agent_loop_model_call_duration_seconds: "s",
        agent_loop_turn_duration_ms: "ms",
        agent_loop_tokens_total: "{token}",
        agent_loop_turns_total: "{turn}"
      })
      expect(Object.entries(units).filter(([, u]) => u === "1")).toEqual([])
      const usage = last("gen_ai.client.token.usage").histogram.dataPoints
      const byType = Object.fromEntries(usage.map((p: any) => [jsonAttributes(p.attributes)["gen_ai.token.type"], [Number(p.count), p.sum]]))
      expect(byType).toEqual({ input: [2, 32], output: [2, 8] })
      const duration = last("gen_ai.client.operation.duration").histogram.dataPoints[0]
      expect(jsonAttributes(duration.attributes)).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.request.model": "m" })
      expect(Number(duration.count)).toBe(2)
      // seconds: two local calls take well under a minute
      expect(duration.sum).toBeGreaterThan(0)
      expect(duration.sum).toBeLessThan(60)
    } finally {
      await model.close()
    }
  })

  it("refuses grpc and a malformed endpoint with the variable named, and nothing is sent", async () => {
    receiver.received.length = 0
    const grpc = await runCli(demoArgs, { env: isolatedEnv(tempDir(), { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }) })
    expect(grpc.code).toBe(1)
    expect(grpc.stderr).toContain("OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported: use http/protobuf or http/json")
    const bad = await runCli(demoArgs, { env: isolatedEnv(tempDir(), { OTEL_EXPORTER_OTLP_ENDPOINT: "localhost:4318" }) })
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain("OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL")
    expect(receiver.received).toEqual([])
  })
})

describe("telemetry settings", () => {
  it("are off without an endpoint or when disabled, and parse headers and the service name", () => {
    expect(fromEnv({})).toBeUndefined()
    expect(fromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" })).toBeUndefined()
    expect(fromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_HEADERS: "a=1, b=x%20y" })).toEqual({
      endpoint: "http://c:4318",
      protocol: "http/protobuf",
      headers: { a: "1", b: "x y" },
      defaultServiceName: "agent-loop"
    })
    expect(fromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_RESOURCE_ATTRIBUTES: "team=x,service.name=mine" })).toMatchObject({ defaultServiceName: undefined })
    expect(fromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_EXPORTER_OTLP_HEADERS: "novalue" })).toEqual({
      problem: "OTEL_EXPORTER_OTLP_HEADERS must be name=value pairs separated by commas"
    })
  })
})
