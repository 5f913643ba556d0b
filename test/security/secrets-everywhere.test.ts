/**
 * Regression: only tool results were scrubbed of known secrets. A context file holding a key went
 * to the model in the system prompt; a model (or a hook, or the user) that wrote a key into its
 * text, reasoning or a tool call's arguments had it stored in the session, published in events and
 * run by the tool. Now every request is scrubbed on its way to the model, every reply as it
 * arrives, and every message as the turn commits it.
 */
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { AgentLoop, Hook, Message, ProviderRejected, SecretsLive, SessionStore, Tool } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { cliSetup, runCli } from "../support/cliProcess.ts"
import { storedSessions } from "../support/storedSessions.ts"

const SECRET = "sk-everywhere-0a1b2c3d4e5f"

/** What a tool was called with, as it got it. */
const received: Array<string> = []
const echo = Tool.make({
  name: "echo",
  description: "Says what it got",
  parameters: Schema.Struct({ text: Schema.String }),
  readOnly: true,
  execute: ({ text }) => Effect.sync(() => (received.push(text), `got ${text}`))
})

const withSecret = (options: Testing.TestLoopOptions) => Testing.layer(options).pipe(Layer.provide(SecretsLive.layer([SECRET])))

describe("known secrets never reach the model or the log", () => {
  it.effect("the system prompt, user input, hook messages, model text, reasoning and tool arguments are all scrubbed", () =>
    Effect.gen(function*() {
      received.length = 0
      const loop = yield* AgentLoop
      const events = (yield* Testing.recordEvents).all
      // a hook adding context that quotes the key, as a careless hook might
      yield* loop.registerHook(Hook.make({ beforeTurn: () => Hook.modify({ addMessages: [Message.user(`hook says ${SECRET}`)] }) }))
      const result = yield* loop.turn("s", `my key is ${SECRET}`)
      expect(result.status).toBe("completed")
      const requests = yield* Testing.requests
      // the system prompt went to the model without the key, its other text kept
      expect(requests[0]!.messages[0]).toEqual(Message.system("Project notes: OPENAI_API_KEY=<redacted> (from AGENTS.md)"))
      const stored = yield* (yield* SessionStore).log("s")
      const assistant = result.messages.find((m) => m.role === "assistant" && (m.toolCalls?.length ?? 0) > 0) as Message.AssistantMessage
      expect(assistant.content).toBe("Using <redacted> now")
      expect(assistant.reasoning).toBe("the key <redacted> is in the prompt")
      expect(JSON.parse(assistant.toolCalls![0]!.arguments)).toEqual({ text: "curl -H 'Authorization: <redacted>'" })
      // the tool ran on the scrubbed arguments
      expect(received).toEqual(["curl -H 'Authorization: <redacted>'"])
      expect(result.finalMessage!.content).toBe("done with <redacted>")
      const everything = JSON.stringify({ result, events: yield* events, requests, stored })
      expect(everything).not.toContain(SECRET)
      expect(everything).toContain("my key is <redacted>")
    }).pipe(Effect.provide(withSecret({
      tools: [echo],
      config: { systemPrompt: `Project notes: OPENAI_API_KEY=${SECRET} (from AGENTS.md)` },
      script: [
        {
          content: `Using ${SECRET} now`,
          reasoning: `the key ${SECRET} is in the prompt`,
          toolCalls: [{ name: "echo", arguments: { text: `curl -H 'Authorization: ${SECRET}'` } }]
        },
        { content: `done with ${SECRET}` }
      ]
    }))))

  it.effect("text that arrived before the provider failed is stored scrubbed", () =>
    Effect.gen(function*() {
      const result = yield* (yield* AgentLoop).turn("p", "go")
      expect(result.status).toBe("failed")
      const stored = JSON.stringify(yield* (yield* SessionStore).log("p"))
      expect(stored).toContain("half an answer with <redacted>")
      expect(stored).not.toContain(SECRET)
    }).pipe(Effect.provide(withSecret({
      script: [{ content: ["half an answer ", `with ${SECRET}`], errorAfterChunks: new ProviderRejected({ message: "gone", status: 400 }) }]
    }))))

  it("the CLI: a context file quoting the provider key reaches the model redacted, and the session never holds it", async (context) => {
    const { server, home, flags, env } = await cliSetup(context, [{ text: `noted ${SECRET}` }], {
      model: "m",
      env: { OPENAI_API_KEY: SECRET },
      files: { "ws/AGENTS.md": `Deploy with OPENAI_API_KEY=${SECRET} set.\n` }
    })
    const result = await runCli(["run", ...flags, "--no-settings", "--session", "ctx", "--output-format", "json", "hi"], { env })
    expect(result.code, result.stderr).toBe(0)
    const system = server.requests[0]!.body.messages[0]
    expect(system.role).toBe("system")
    expect(system.content).toContain("Deploy with OPENAI_API_KEY=<redacted> set.")
    expect(JSON.parse(result.stdout).result).toBe("noted <redacted>")
    const stored = storedSessions(path.join(home, "data"))
    expect(stored).toContain("noted <redacted>")
    expect([JSON.stringify(server.requests.map((r) => r.body)), stored, result.stdout, result.stderr].join("\n")).not.toContain(SECRET)
  })
})
