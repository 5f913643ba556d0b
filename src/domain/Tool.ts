/**
 * Tools: typed functions the model may call.
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Tool } from "effect-agent-loop"
 *
 * const add = Tool.make({
 *   name: "add",
 *   description: "Adds two numbers",
 *   parameters: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
 *   readOnly: true,
 *   execute: ({ a, b }) => Effect.succeed(String(a + b))
 * })
 * ```
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { ToolError } from "./errors.ts"
import type { Content } from "./Message.ts"
import type { ToolDefinition } from "./Provider.ts"

/**
 * What a tool returns when it wants to flag its own result as an error, or to return content
 * parts (a screenshot beside its text).
 */
export interface ToolOutput {
  readonly content: Content
  readonly isError?: boolean
}

/** Where a tool call happens; handed to `execute`. */
export interface ToolContext {
  readonly toolCallId: string
  readonly turnId: string
  readonly sessionKey: string
  readonly iteration: number
  readonly depth: number
}

/** Where an MCP tool comes from: its server and its name there, whatever name it is registered under. */
export interface McpOrigin {
  readonly server: string
  readonly tool: string
}

/**
 * A tool ready for a registry. `R` is what `execute` needs from the context; `A` is the type of its
 * decoded arguments (what `execute` receives), which typed hooks (`Hook.forTool`) see.
 */
export interface Tool<R = never, A = unknown> {
  /** Type-level only, never set: the decoded arguments' type, for `Hook.forTool`. */
  readonly "~args"?: A | undefined
  readonly name: string
  /** For an MCP tool, its server and name there (rules and hooks name it `mcp__server__tool`). */
  readonly mcp?: McpOrigin
  readonly description: string
  /** Static: known without looking at arguments. Undeclared means mutating. */
  readonly readOnly: boolean
  /** Whether every call needs the user's approval, whatever its arguments (`exec`). */
  readonly requiresApproval: boolean
  /**
   * Whether running a call twice has the effect of running it once (reading a file, searching).
   * Only such a call is run again when a crash cut it short and its turn resumes; undeclared
   * means not idempotent.
   */
  readonly idempotent?: boolean
  /**
   * Whether this call, with its decoded arguments, needs approval: always when `requiresApproval`,
   * else as the tool's per-call rule says (`write_file` into a hooks directory). The loop asks this.
   */
  readonly needsApproval: (args: unknown) => boolean
  readonly timeout: Duration.Duration | undefined
  /** The JSON Schema the model sees. */
  readonly definition: ToolDefinition
  /** Decodes the parsed JSON arguments with the tool's Schema. */
  readonly decode: (input: unknown) => Effect.Effect<unknown, Schema.SchemaError>
  /**
   * Encodes decoded arguments back to their JSON form (the inverse of `decode`), for a typed hook's
   * rewrite (`Hook.forTool`). Absent on a tool built without a Schema: its rewrites go as they are.
   */
  readonly encode?: ((args: unknown) => Effect.Effect<unknown, Schema.SchemaError>) | undefined
  readonly execute: (args: unknown, context: ToolContext) => Effect.Effect<string | ToolOutput, ToolError, R>
}

/** Any tool, whatever it needs: the element type of a list of tools that need different services. */
// `any` (not `unknown`): a `Tool<OrderDb>` is a `Tool<any>`, and `Requirements` reads back each tool's own.
export type Any = Tool<any>

/**
 * What the tools of a union need from the context, together: `Requirements<typeof a | typeof b>`
 * is `A | B` (distributive, so a list's `Tools[number]` gives the union, not its first tool's).
 */
export type Requirements<T extends Any> = T extends Tool<infer R> ? R : never

/** Options of `Tool.make`. */
export interface MakeOptions<S extends Schema.Decoder<unknown>, R> {
  readonly name: string
  readonly description: string
  readonly parameters: S
  readonly readOnly?: boolean
  /** A call may run again after a crash cut it short (see `Tool.idempotent`); default false. */
  readonly idempotent?: boolean
  /** `true`: every call needs approval; a function: the calls for whose decoded arguments it is true. */
  readonly requiresApproval?: boolean | ((args: S["Type"]) => boolean)
  readonly timeout?: Duration.Input
  /** Overrides the JSON Schema derived from `parameters` (for tools that bring their own, such as MCP tools). */
  readonly jsonSchema?: Record<string, unknown>
  /** For an MCP tool: its server and its name there. */
  readonly mcp?: McpOrigin
  readonly execute: (args: S["Type"], context: ToolContext) => Effect.Effect<string | ToolOutput, ToolError, R>
}

/** The JSON Schema of a parameters Schema, as providers expect it. */
export const jsonSchemaOf = (schema: Schema.Top): Record<string, unknown> => {
  const document = Schema.toJsonSchemaDocument(schema)
  const definitions = document.definitions as Record<string, unknown>
  return {
    ...(document.schema as Record<string, unknown>),
    ...(Object.keys(definitions).length > 0 ? { $defs: definitions } : {})
  }
}

/** Decoding options that report every issue of a value, not only the first. */
const ALL_ERRORS = { errors: "all" } as const

/**
 * Builds a tool from a Schema of its parameters and an effectful `execute`. Arguments are decoded
 * with Schema's default options; arguments that fail are decoded again to report every issue.
 */
export const make = <S extends Schema.Decoder<unknown>, R = never>(options: MakeOptions<S, R>): Tool<R, S["Type"]> => {
  const decode = Schema.decodeUnknownEffect(options.parameters as Schema.Decoder<unknown>)
  const encode = Schema.encodeUnknownEffect(options.parameters as unknown as Schema.Codec<unknown, unknown>)
  const approval = options.requiresApproval ?? false
  return {
    name: options.name,
    ...(options.mcp === undefined ? {} : { mcp: options.mcp }),
    description: options.description,
    readOnly: options.readOnly ?? false,
    idempotent: options.idempotent ?? false,
    requiresApproval: approval === true,
    needsApproval: typeof approval === "function" ? (args) => approval(args as S["Type"]) : () => approval,
    timeout: options.timeout === undefined ? undefined : Duration.fromInputUnsafe(options.timeout),
    definition: {
      name: options.name,
      description: options.description,
      parameters: options.jsonSchema ?? jsonSchemaOf(options.parameters)
    },
    decode: (input) => Effect.catchEager(decode(input), () => decode(input, ALL_ERRORS)),
    encode: (args) => Effect.catchEager(encode(args), () => encode(args, ALL_ERRORS)),
    execute: (args, context) => options.execute(args as S["Type"], context)
  }
}

/**
 * The name of the tool that ends plan mode (`makeExitPlanMode`): the loop offers it only to a root
 * turn in plan mode (`TurnOptions.planMode`).
 */
export const EXIT_PLAN_MODE = "exit_plan_mode"

/** Normalises what `execute` returned. */
export const toOutput = (result: string | ToolOutput): ToolOutput =>
  typeof result === "string" ? { content: result } : result
