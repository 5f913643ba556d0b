/**
 * pi-agent-core's side of the peer comparison: the same workload on its `Agent`, with one
 * subscriber that counts every event.
 *
 * The model is a `streamFn` built on pi-ai's own `createAssistantMessageEventStream`, emitting
 * what its real providers emit (one mutable partial message, `*_start`/`*_delta`/`*_end` events,
 * arguments parsed from JSON). pi-ai's `registerFauxProvider` is not used: it serializes the whole
 * context on every call to estimate usage and splits text into random chunks, which would measure
 * the fake model rather than the loop.
 */
import { Agent, type AgentTool, type StreamFn } from "@mariozechner/pi-agent-core"
import { type AssistantMessage, createAssistantMessageEventStream, type Model, type ToolCall, Type } from "@mariozechner/pi-ai"
import { deltaTexts, echoArguments, planner, type Measurement, settle, stopwatch, type Workload } from "./workload.ts"

const model: Model<"bench"> = {
  id: "bench",
  name: "bench",
  api: "bench",
  provider: "bench",
  baseUrl: "",
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 128_000,
  maxTokens: 4096
}

const EchoParameters = Type.Object({ text: Type.String() })

const echo: AgentTool<typeof EchoParameters> = {
  name: "echo",
  label: "echo",
  description: "Returns its text.",
  parameters: EchoParameters,
  execute: async (_id, params) => ({ content: [{ type: "text", text: params.text }], details: {} })
}

const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }

let callIds = 0

/** A zero-latency model following `plan`. */
const streamFn = (workload: Workload, plan: () => ReturnType<typeof planner>): StreamFn => () => {
  const stream = createAssistantMessageEventStream()
  const callsTools = plan().next()
  const texts = deltaTexts(workload)
  const output: AssistantMessage = {
    role: "assistant",
    content: [],
    api: "bench",
    provider: "bench",
    model: "bench",
    usage,
    stopReason: callsTools ? "toolUse" : "stop",
    timestamp: Date.now()
  }
  stream.push({ type: "start", partial: output })
  const text = texts.length > 0 ? texts : callsTools ? [] : ["done"]
  if (text.length > 0) {
    const block = { type: "text" as const, text: "" }
    output.content.push(block)
    const contentIndex = output.content.length - 1
    stream.push({ type: "text_start", contentIndex, partial: output })
    for (const delta of text) {
      block.text += delta
      stream.push({ type: "text_delta", contentIndex, delta, partial: output })
    }
    stream.push({ type: "text_end", contentIndex, content: block.text, partial: output })
  }
  if (callsTools) {
    echoArguments(workload).forEach((args) => {
      const json = JSON.stringify(args)
      const call: ToolCall = { type: "toolCall", id: `call_${callIds++}`, name: "echo", arguments: {} }
      output.content.push(call)
      const contentIndex = output.content.length - 1
      stream.push({ type: "toolcall_start", contentIndex, partial: output })
      stream.push({ type: "toolcall_delta", contentIndex, delta: json, partial: output })
      call.arguments = JSON.parse(json)
      stream.push({ type: "toolcall_end", contentIndex, toolCall: call, partial: output })
    })
  }
  stream.push({ type: "done", reason: callsTools ? "toolUse" : "stop", message: output })
  stream.end(output)
  return stream
}

/** Runs one turn of `workload` on a fresh agent and measures it. */
const turn = async (workload: Workload): Promise<Omit<Measurement, "firstTurnMicrosPerIteration">> => {
  const plan = planner(workload)
  const agent = new Agent({ initialState: { model, tools: [echo] }, streamFn: streamFn(workload, () => plan) })
  let events = 0
  agent.subscribe(() => {
    events++
  })
  await settle()
  const stop = stopwatch()
  await agent.prompt("go")
  const { cpuMicros, mainCpuMicros, micros } = stop()
  if (agent.state.errorMessage !== undefined) throw new Error(`pi turn failed: ${agent.state.errorMessage}`)
  const calls = workload.iterations + 1
  if (plan.calls() !== calls) throw new Error(`pi made ${plan.calls()} model calls, expected ${calls}`)
  return {
    microsPerIteration: micros / calls,
    cpuMicrosPerIteration: cpuMicros / calls,
    mainCpuMicrosPerIteration: mainCpuMicros / calls,
    eventsPerIteration: events / calls
  }
}

/** A warm-up turn, then the measured one; both are timed. */
export const run = async (workload: Workload, warmUp: Workload): Promise<Measurement> => {
  const first = await turn(warmUp)
  const measured = await turn(workload)
  return { ...measured, firstTurnMicrosPerIteration: first.microsPerIteration }
}
