/**
 * The zero-latency model our loop runs against in the benchmarks: a `Provider` whose reply is
 * the chunks of one response, computed from the workload alone, handed over whole or streamed
 * (`Path`).
 *
 * It is not `Scripted`: that test double records every request it receives (each holding the
 * whole history), so over a long turn it would retain memory quadratic in the iterations and the
 * benchmark would measure its garbage collection rather than the loop.
 */
import { Effect, Layer, Schema, Stream } from "effect"
import { Provider, type ProviderTypes, Tool } from "../src/index.ts"
import { deltaTexts, echoArguments, type Workload } from "./workload.ts"

/** The no-op tool the model calls: returns its text. */
export const echo = Tool.make({
  name: "echo",
  description: "Returns its text.",
  parameters: Schema.Struct({ text: Schema.String }),
  readOnly: true,
  execute: (args) => Effect.succeed(args.text)
})

/**
 * How the model hands its reply over: `whole` (all chunks at once, as a script or a cassette
 * does) or `stream` (a provider that implements only `stream`, its chunks from an array, as pi's
 * mock `streamFn` pushes them: the path every real provider takes).
 */
export type Path = "whole" | "stream"

/**
 * A provider that answers each request with `deltas` text deltas, then, when `callsTools(request)`
 * says so, `tools` echo calls; otherwise the text (or "done" when there are no deltas) is the answer.
 */
export const layer = (
  workload: Pick<Workload, "deltas" | "tools">,
  callsTools: (request: ProviderTypes.ProviderRequest) => boolean,
  path: Path = "whole"
): Layer.Layer<Provider> => {
  const text = deltaTexts({ ...workload, iterations: 0 }).map((text): ProviderTypes.ProviderChunk => ({ _tag: "TextDelta", text }))
  const args = echoArguments({ ...workload, iterations: 0 }).map((a) => JSON.stringify(a))
  const answer: ReadonlyArray<ProviderTypes.ProviderChunk> = [
    ...(text.length > 0 ? text : [{ _tag: "TextDelta", text: "done" } as const]),
    { _tag: "Finish", reason: "stop" }
  ]
  let call = 0
  const toolCalls = (): ReadonlyArray<ProviderTypes.ProviderChunk> => {
    call++
    return [
      ...text,
      ...args.map((argumentsDelta, index): ProviderTypes.ProviderChunk => ({
        _tag: "ToolCallDelta",
        index,
        id: `call_${call}_${index}`,
        name: "echo",
        argumentsDelta
      })),
      { _tag: "Finish", reason: "tool_calls" }
    ]
  }
  // The reply is made when the loop asks for it, as pi's `streamFn` (`pi.ts`) makes its own.
  const reply = (request: ProviderTypes.ProviderRequest) => callsTools(request) ? toolCalls() : answer
  return Layer.succeed(
    Provider,
    path === "stream"
      ? { stream: (request) => Stream.fromArray(reply(request)) }
      : Provider.fromWhole((request) => Effect.succeed(reply(request)))
  )
}
