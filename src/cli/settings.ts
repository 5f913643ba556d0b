/**
 * From parsed flags and the environment to everything `run` and `chat` need, checked up front so
 * that a bad combination fails with one line before anything starts.
 */
import * as nodePath from "node:path"
import { Effect, Option, Schema } from "effect"
import { readCassette } from "../layers/providers/Replay.ts"
import { BuiltinToolName, builtinTools } from "../tools/index.ts"
import { dataDir, newSessionKey, readLastSession } from "./dataDir.ts"
import { fail } from "./failure.ts"
import type { AgentFlags } from "./flags.ts"

/** Which provider, and how to reach it. */
export type ProviderSettings =
  | { readonly _tag: "openai"; readonly baseUrl: string | undefined }
  | { readonly _tag: "anthropic"; readonly baseUrl: string | undefined }
  | { readonly _tag: "replay"; readonly cassette: string }

/** The resolved settings of an agent command. */
export interface CliSettings {
  readonly provider: ProviderSettings
  /** Record the provider's responses to this cassette. */
  readonly record: string | undefined
  readonly model: string
  readonly systemPrompt: string
  readonly sessionKey: string
  /** Save the session (JSONL store) and remember it for `--continue`. */
  readonly persist: boolean
  readonly dataDir: string
  readonly maxIterations: number | undefined
  readonly tools: ReadonlyArray<BuiltinToolName>
  /** Absolute. */
  readonly workspace: string
  readonly yes: boolean
  readonly events: string | undefined
  readonly mcpConfig: string | undefined
  readonly verbose: boolean
}

/**
 * The built-in system prompt. It names no path or date so that a recorded cassette replays on
 * any machine.
 */
const defaultSystemPrompt = "You are agent-loop, a careful assistant working in a workspace directory on the user's " +
  "machine. Look at files with the tools before answering questions about them; paths are relative to the " +
  "workspace root. Be concise."

const isToolName = Schema.is(BuiltinToolName)

/**
 * The built-in tools enabled when `--tools` is not given: every one that needs no approval (so
 * not `exec`, which runs commands), since without `--yes` a call needing approval asks each time.
 */
export const defaultTools: ReadonlyArray<BuiltinToolName> = builtinTools()
  .filter((tool) => !tool.requiresApproval)
  .flatMap((tool) => isToolName(tool.name) ? [tool.name] : [])

const decodeToolName = Schema.decodeUnknownOption(BuiltinToolName)

/** Parses `--tools a,b,c`; an empty value enables none. */
export const parseTools = (value: string) =>
  Effect.gen(function*() {
    const names = value.split(",").map((name) => name.trim()).filter((name) => name !== "")
    const tools: Array<BuiltinToolName> = []
    for (const name of names) {
      const tool = decodeToolName(name)
      if (Option.isNone(tool)) {
        return yield* fail(`unknown tool "${name}" in --tools; built-in tools: ${BuiltinToolName.literals.join(", ")}`)
      }
      if (!tools.includes(tool.value)) tools.push(tool.value)
    }
    return tools
  })

const provider = (flags: AgentFlags) =>
  Effect.gen(function*() {
    const named = Option.getOrUndefined(flags.provider)
    const cassette = Option.getOrUndefined(flags.replay)
    const baseUrl = Option.getOrUndefined(flags.baseUrl)
    if (cassette !== undefined && Option.isSome(flags.record)) return yield* fail("--record and --replay cannot be used together")
    if (cassette !== undefined) {
      if (named !== undefined && named !== "replay") return yield* fail(`--replay answers from a cassette, but --provider is ${named}`)
      return { _tag: "replay", cassette: nodePath.resolve(cassette) } as const
    }
    if (named === "replay") return yield* fail("--provider replay needs a cassette: --replay FILE")
    return { _tag: named ?? "openai", baseUrl } as const
  })

const model = (flags: AgentFlags, chosen: ProviderSettings) =>
  Effect.gen(function*() {
    if (Option.isSome(flags.model)) return flags.model.value
    if (chosen._tag === "replay") {
      const entries = yield* readCassette(chosen.cassette).pipe(Effect.catch((error) => fail(error.message)))
      const first = entries[0]
      if (first !== undefined) return first.request.model
      return yield* fail(`cassette ${chosen.cassette} is empty`)
    }
    return yield* fail("no model: pass --model NAME or set AGENT_LOOP_MODEL")
  })

const sessionKey = (flags: AgentFlags, data: string) =>
  Effect.gen(function*() {
    if (Option.isSome(flags.session)) {
      if (flags.continue) return yield* fail("--session and --continue cannot be used together")
      return flags.session.value
    }
    if (!flags.continue) return yield* newSessionKey
    const last = yield* readLastSession(data)
    if (Option.isNone(last)) return yield* fail("no session to continue yet: start one without --continue")
    return last.value
  })

/** Resolves the flags of `run` or `chat`; an impossible combination fails with one line. */
export const resolve = (flags: AgentFlags, env: NodeJS.ProcessEnv = process.env) =>
  Effect.gen(function*() {
    const chosen = yield* provider(flags)
    const data = dataDir(env)
    if (flags.ephemeral && flags.continue) return yield* fail("--ephemeral sessions cannot be continued")
    const settings: CliSettings = {
      provider: chosen,
      record: Option.getOrUndefined(Option.map(flags.record, (file) => nodePath.resolve(file))),
      model: yield* model(flags, chosen),
      systemPrompt: Option.getOrElse(flags.system, () => defaultSystemPrompt),
      sessionKey: yield* sessionKey(flags, data),
      persist: !flags.ephemeral,
      dataDir: data,
      maxIterations: Option.getOrUndefined(flags.maxIterations),
      tools: Option.isSome(flags.tools) ? yield* parseTools(flags.tools.value) : defaultTools,
      workspace: nodePath.resolve(Option.getOrElse(flags.workspace, () => ".")),
      yes: flags.yes,
      events: Option.getOrUndefined(Option.map(flags.events, (file) => nodePath.resolve(file))),
      mcpConfig: Option.getOrUndefined(flags.mcpConfig),
      verbose: flags.verbose
    }
    return settings
  })
