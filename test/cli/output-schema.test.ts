/**
 * `agent-loop run --output-schema FILE --output-format json`, end to end (the real launcher
 * against a scripted OpenAI-compatible server on 127.0.0.1): the file's JSON Schema reaches the
 * model as `response_format`, the answer is decoded and printed as `output`, a wrong answer goes
 * back once and then fails the run, and a bad file or flag fails with one line before any call.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { isolatedEnv, runCli, tempDir, type TestContext } from "../support/cliProcess.ts"
import { type Script, start } from "../support/openaiServer.ts"

const citySchema = {
  $schema: "http://json-schema.org/draft-07/schema#",
  type: "object",
  properties: { city: { type: "string" }, population: { type: "integer", minimum: 0 } },
  required: ["city", "population"],
  additionalProperties: false
}

const setup = async (context: TestContext, script: Script) => {
  const server = await start(script)
  context.onTestFinished(() => server.close())
  const home = tempDir()
  const workspace = path.join(home, "ws")
  fs.mkdirSync(workspace)
  const schemaFile = path.join(home, "answer.schema.json")
  fs.writeFileSync(schemaFile, JSON.stringify(citySchema))
  const base = ["--base-url", server.url, "--model", "gpt-4o", "--workspace", workspace, "--ephemeral"]
  return { server, home, schemaFile, base, flags: [...base, "--output-format", "json"], env: isolatedEnv(home) }
}

describe.concurrent("run --output-schema", () => {
  it("sends the file's schema as response_format and prints the decoded answer as output", async (context) => {
    const { flags, env, schemaFile, server } = await setup(context, [{ text: "{\"city\":\"Tokyo\",\"population\":37000000}" }])
    const result = await runCli(["run", ...flags, "--output-schema", schemaFile, "Largest city?"], { env })
    expect(result.code).toBe(0)
    expect(result.stderr).toMatch(/^── completed · 1 iteration/)
    const json = JSON.parse(result.stdout)
    expect(json).toMatchObject({ status: "completed", output: { city: "Tokyo", population: 37000000 }, error: null })
    const { $schema: _, ...sent } = citySchema
    expect(server.requests[0]!.body.response_format).toEqual({ type: "json_schema", json_schema: { name: "respond", schema: sent, strict: true } })
    expect(server.requests[0]!.body.tools?.map((t: any) => t.function.name) ?? []).not.toContain("respond")
  })

  it("an answer the schema rejects goes back with the error; rejected again, the run fails with output null", async (context) => {
    const { flags, env, schemaFile, server } = await setup(context, [{ text: "{\"city\":\"Nowhere\",\"population\":-1}" }])
    const result = await runCli(["run", ...flags, "--output-schema", schemaFile, "Largest city?"], { env })
    expect(result.code).toBe(1)
    const json = JSON.parse(result.stdout)
    expect(json).toMatchObject({ status: "failed", output: null })
    expect(json.error).toMatch(/^OutputInvalid: The answer does not match the output schema/)
    // The default maxOutputRetries (2): three answers, the last one fails the run.
    expect(server.requests).toHaveLength(3)
    expect(server.requests[1]!.body.messages.at(-1).content).toContain("does not match the output schema")
    expect(result.stderr).toContain("agent-loop: OutputInvalid: The answer does not match the output schema")
  })

  it("a bad schema file, a missing one, or a format other than json fail with one line and call nothing", async (context) => {
    const { base, flags, env, home, server } = await setup(context, [{ text: "unused" }])
    const notJson = path.join(home, "bad.json")
    fs.writeFileSync(notJson, "{ type: object")
    const unsupported = path.join(home, "unsupported.json")
    fs.writeFileSync(unsupported, JSON.stringify({ type: "object", if: { required: ["a"] }, then: { required: ["b"] } }))
    const cases = [
      [[...flags, "--output-schema", notJson], `agent-loop: --output-schema ${notJson}: not JSON (`],
      [[...flags, "--output-schema", path.join(home, "missing.json")], `agent-loop: --output-schema ${path.join(home, "missing.json")}: cannot read it (`],
      [[...flags, "--output-schema", unsupported], `agent-loop: --output-schema ${unsupported}: not a JSON Schema the loop can use (`],
      [[...base, "--output-schema", notJson, "--output-format", "text"], "agent-loop: --output-schema needs --output-format json"]
    ] as const
    for (const [extra, line] of cases) {
      const result = await runCli(["run", ...extra, "hi"], { env })
      expect(result.code).toBe(1)
      expect(result.stderr.split("\n").filter((l) => l !== ""), result.stderr).toHaveLength(1)
      expect(result.stderr.startsWith(line), result.stderr).toBe(true)
      expect(result.stdout).toBe("")
    }
    expect(server.requests).toHaveLength(0)
  })
})
