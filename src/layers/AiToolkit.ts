/**
 * `effect/ai` toolkits and the loop's tools, both ways: a `Toolkit`'s tools run in the loop as
 * they are (`toTools`), and the loop's tools are a `Toolkit` that `LanguageModel.generateText`
 * can be given (`fromTools`).
 *
 * @example
 * ```ts
 * import { Effect, Layer, Schema } from "effect"
 * import { Tool as AiTool, Toolkit } from "effect/ai"
 * import { AiToolkit, ToolRegistryLive } from "effect-agent-loop"
 *
 * const GetWeather = AiTool.make("get_weather", {
 *   description: "The weather in a city",
 *   parameters: Schema.Struct({ city: Schema.String }),
 *   success: Schema.String
 * })
 * const Weather = Toolkit.make(GetWeather)
 * const handlers = Weather.toLayer({ get_weather: ({ city }) => Effect.succeed(`${city}: sunny`) })
 *
 * // the loop's registry with the toolkit's tools; their handlers go under it, as any service
 * const tools = ToolRegistryLive.layer(AiToolkit.toTools(Weather)).pipe(Layer.provide(handlers))
 * ```
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as JsonSchema from "effect/JsonSchema"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as AiError from "effect/ai/AiError"
import type * as Prompt from "effect/ai/Prompt"
import * as AiTool from "effect/ai/Tool"
import * as Toolkit from "effect/ai/Toolkit"
import { ToolError } from "../domain/errors.ts"
import { type Content, type ContentPart, textOf } from "../domain/Message.ts"
import * as Tool from "../domain/Tool.ts"

/** What the loop's tools made from a toolkit need: the toolkit's handlers, and what those need. */
export type ToolkitRequirements<Tools extends Record<string, AiTool.Any>> =
  | AiTool.HandlersFor<Tools>
  | AiTool.HandlerServices<Tools[keyof Tools]>

/**
 * The tools of an `effect/ai` toolkit as the loop's tools, each run by the toolkit's handler (its
 * parameters decoded and its result encoded by the tool's own Schemas). They need the toolkit's
 * handlers layer (`toolkit.toLayer({...})`) under `ToolRegistryLive.layer`, as a tool that needs
 * a service does. What carries over: the description and JSON Schema the model sees, the
 * `Readonly` and `Idempotent` annotations, and `needsApproval` (a function of the arguments that
 * answers with an Effect counts as "needs approval": the loop decides before running anything).
 * A successful result reaches the model as its `toModelOutput` parts (images as images) or its
 * encoded value (text as it is, anything else as JSON); a failure as an error result. Tools the
 * provider runs itself (`Tool.providerDefined`) are left out: they are not the loop's to run.
 */
export const toTools = <Tools extends Record<string, AiTool.Any>>(
  toolkit: Toolkit.Toolkit<Tools>
): Array<Tool.Tool<ToolkitRequirements<Tools>, AiTool.Parameters<Tools[keyof Tools]>>> =>
  Object.values(toolkit.tools)
    .filter((tool) => !AiTool.isProviderDefined(tool))
    .map((tool) => loopTool(toolkit as unknown as Toolkit.Toolkit<Record<string, AiTool.Any>>, tool)) as Array<
      Tool.Tool<ToolkitRequirements<Tools>, AiTool.Parameters<Tools[keyof Tools]>>
    >

const loopTool = (toolkit: Toolkit.Toolkit<Record<string, AiTool.Any>>, tool: AiTool.Any): Tool.Tool<unknown> => {
  const parameters = (Schema.isSchema(tool.parametersSchema) ? tool.parametersSchema : Schema.Unknown) as Schema.Codec<unknown>
  const encode = Schema.encodeUnknownEffect(parameters)
  const approval = tool.needsApproval
  return Tool.make({
    name: tool.name,
    description: AiTool.getDescription(tool) ?? "",
    parameters,
    jsonSchema: AiTool.getJsonSchema(tool) as Record<string, unknown>,
    readOnly: Context.get(tool.annotations, AiTool.Readonly),
    idempotent: Context.get(tool.annotations, AiTool.Idempotent),
    requiresApproval: typeof approval === "function"
      ? (args: unknown) => {
        const answer = approval(args, { toolCallId: "", messages: [] })
        return typeof answer === "boolean" ? answer : true
      }
      : approval === true,
    execute: (args, context) =>
      Effect.gen(function*() {
        const handlers = yield* toolkit
        // the handler decodes its parameters itself, from their encoded form
        const params = yield* encode(args)
        const results = yield* handlers.handle(tool.name, params as never, context.toolCallId)
        const last = yield* Stream.runLast(Stream.filter(results, (result) => !result.preliminary))
        if (Option.isNone(last)) return yield* new ToolError({ message: `Tool "${tool.name}" gave no result` })
        const { encodedResult, isFailure, modelOutput } = last.value
        if (isFailure) return { content: textOfValue(encodedResult), isError: true }
        return modelOutput === undefined ? textOfValue(encodedResult) : { content: contentOf(modelOutput) }
      }).pipe(Effect.mapError((error) => error instanceof ToolError ? error : new ToolError({ message: messageOf(error) })))
  }) as Tool.Tool<unknown>
}

/** An encoded result as the text the model sees: text as it is, anything else as JSON. */
const textOfValue = (value: unknown): string =>
  typeof value === "string" ? value : value === undefined ? "" : JSON.stringify(value)

/** `toModelOutput` parts as content: text, inline or linked images, and a placeholder for other files. */
const contentOf = (parts: ReadonlyArray<Prompt.ToolModelOutputPart>): Content =>
  parts.map((part): ContentPart => {
    if (part.type === "text") return { type: "text", text: part.text }
    if (part.mediaType.startsWith("image/")) {
      if (part.data instanceof URL) return { type: "image", url: part.data.href, mediaType: part.mediaType }
      if (typeof part.data === "string") return { type: "image", mediaType: part.mediaType, data: part.data }
    }
    return { type: "text", text: `[${part.mediaType}${part.fileName === undefined ? "" : ` ${part.fileName}`} omitted]` }
  })

/** What a failure of the toolkit's handler says, for the model. */
const messageOf = (error: unknown): string => {
  if (AiError.isAiError(error) || error instanceof Error) return error.message
  if (typeof error === "string") return error
  const message = (error as { readonly message?: unknown } | undefined)?.message
  return typeof message === "string" ? message : textOfValue(error)
}

/** A loop tool as an `effect/ai` tool: its JSON Schema, a text result, and failures returned to the model. */
export type LoopAiTool = AiTool.Dynamic<string, {
  readonly parameters: JsonSchema.JsonSchema
  readonly success: typeof Schema.String
  readonly failure: typeof Schema.String
  readonly failureMode: "return"
}>

/** The loop's tools as an `effect/ai` toolkit, and the layer of its handlers. */
export interface LoopToolkit<R> {
  readonly toolkit: Toolkit.Toolkit<Record<string, LoopAiTool>>
  /** The handlers: each runs the loop tool, so it needs what the tools need. */
  readonly layer: Layer.Layer<AiTool.HandlersFor<Record<string, LoopAiTool>>, never, R>
}

/**
 * The loop's tools as an `effect/ai` toolkit, for `LanguageModel.generateText({ toolkit })`
 * (or `Toolkit.merge` with toolkits of your own); provide `layer`, which runs them. Each tool
 * keeps its name, description and JSON Schema; its arguments are decoded by its own Schema (a
 * bad one is a failure the model sees, as in the loop), its result is text (images as their
 * placeholders), and a failure or an error result is returned to the model as a failure. A tool
 * that needs approval keeps needing it (`needsApproval`), so `effect/ai` asks for it before
 * running. Outside a turn there is no session: the tools get an empty `sessionKey` and `turnId`,
 * and one that needs `CurrentTurn` (`subagent`) makes the layer require it.
 */
export const fromTools = <const Tools extends ReadonlyArray<Tool.Any>>(
  tools: Tools
): LoopToolkit<Tool.Requirements<Tools[number]>> => {
  const aiTools = tools.map((tool) =>
    AiTool.dynamic(tool.name, {
      description: tool.description,
      parameters: tool.definition.parameters as JsonSchema.JsonSchema,
      success: Schema.String,
      failure: Schema.String,
      failureMode: "return",
      needsApproval: tool.requiresApproval ? true : (params: unknown) =>
        Effect.match(tool.decode(params), { onFailure: () => false, onSuccess: tool.needsApproval })
    })
      .annotate(AiTool.Readonly, tool.readOnly)
      .annotate(AiTool.Destructive, !tool.readOnly)
      .annotate(AiTool.Idempotent, tool.idempotent ?? false)
  )
  const toolkit = Toolkit.make(...aiTools) as unknown as Toolkit.Toolkit<Record<string, LoopAiTool>>
  const layer = toolkit.toLayer(Effect.gen(function*() {
    const context = yield* Effect.context<Tool.Requirements<Tools[number]>>()
    return Object.fromEntries(tools.map((tool) => [
      tool.name,
      (params: unknown, handler: Toolkit.HandlerContext<LoopAiTool>) =>
        runTool(tool, params, handler.toolCallId ?? "").pipe(Effect.provideContext(context as Context.Context<any>))
    ]))
  }))
  return { toolkit, layer: layer as Layer.Layer<AiTool.HandlersFor<Record<string, LoopAiTool>>, never, Tool.Requirements<Tools[number]>> }
}

/** One call of a loop tool for a toolkit handler: its text, or its error message as the failure. */
const runTool = (tool: Tool.Any, params: unknown, toolCallId: string): Effect.Effect<string, string, any> =>
  Effect.matchEffect(tool.decode(params), {
    onFailure: (error) => Effect.fail(`Invalid arguments for tool "${tool.name}": ${error.message}`),
    onSuccess: (args) =>
      Effect.matchEffect(tool.execute(args, { toolCallId, turnId: "", sessionKey: "", iteration: 0, depth: 0 }), {
        onFailure: (error) => Effect.fail(error.message),
        onSuccess: (result) => {
          const output = Tool.toOutput(result)
          return output.isError === true ? Effect.fail(textOf(output.content)) : Effect.succeed(textOf(output.content))
        }
      })
  })
