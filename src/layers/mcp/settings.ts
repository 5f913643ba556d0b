/**
 * The defaults every server of one `McpTools` call shares, resolved once: the host's options win,
 * then the environment (`MCP_TIMEOUT` and `MCP_TOOL_TIMEOUT`, in milliseconds as Claude Code reads
 * them, or as text such as `"90 seconds"`), then the built-in defaults. A server's own config wins
 * over all of them.
 */
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { DurationSetting } from "../../domain/Config.ts"
import { InvalidConfig } from "../../domain/errors.ts"
import { DEFAULT_STARTUP_TIMEOUT } from "./connect.ts"
import { DEFAULT_MAX_IMAGE_BYTES } from "../../domain/Message.ts"
import { DEFAULT_MAX_OUTPUT_BYTES } from "./content.ts"

/** What a host may set for all servers. */
export interface SettingsOptions {
  /** Starting, initialising and listing one server. Default: `MCP_TIMEOUT`, else 30 seconds. */
  readonly startupTimeout?: Duration.Input
  /** One tool call. Default: `MCP_TOOL_TIMEOUT`, else 5 minutes. */
  readonly toolTimeout?: Duration.Input
  /** The longest tool result kept, in bytes of UTF-8. Default 64 KiB. */
  readonly maxOutputBytes?: number
  /** The largest image (decoded bytes) of a result shown as an image; a larger one is summarised. Default 5 MiB. */
  readonly maxImageBytes?: number
  /** Where `${VAR}` references in server configs are looked up. Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>
  /** What `${workspaceFolder}` in server configs stands for. Default the current directory. */
  readonly workspace?: string
}

/** The resolved defaults, and the scrub every text from a server goes through. */
export interface McpSettings {
  readonly startupTimeout: Duration.Duration
  readonly toolTimeout: Duration.Duration
  readonly maxOutputBytes: number
  readonly maxImageBytes: number
  readonly scrub: (text: string) => string
}

/** The default bound of one tool call: long tools (builds, test runs) finish, a hung server does not hold a turn forever. */
export const DEFAULT_TOOL_TIMEOUT = Duration.minutes(5)

const decodeDuration = Schema.decodeUnknownEffect(DurationSetting)

/** A duration from the environment: milliseconds, or text; a bad value is an `InvalidConfig` naming the variable. */
const fromEnv = (name: string) =>
  Config.option(Config.String(name)).pipe(
    Effect.mapError(() => new InvalidConfig({ field: name, message: `${name} cannot be read` })),
    Effect.flatMap(Option.match({
      onNone: () => Effect.succeed(Option.none<Duration.Duration>()),
      onSome: (text) =>
        decodeDuration(/^\s*\d+\s*$/.test(text) ? Number(text) : text).pipe(
          Effect.map(Option.some),
          Effect.mapError(() =>
            new InvalidConfig({ field: name, message: `${name} must be milliseconds or a duration such as "30 seconds"` })
          )
        )
    }))
  )

/** Resolves the defaults as the module doc says. */
export const resolveSettings = (options: SettingsOptions, scrub: (text: string) => string): Effect.Effect<McpSettings, InvalidConfig> =>
  Effect.gen(function*() {
    const startupEnv = yield* fromEnv("MCP_TIMEOUT")
    const toolEnv = yield* fromEnv("MCP_TOOL_TIMEOUT")
    return {
      startupTimeout: options.startupTimeout === undefined
        ? Option.getOrElse(startupEnv, () => DEFAULT_STARTUP_TIMEOUT)
        : Duration.fromInputUnsafe(options.startupTimeout),
      toolTimeout: options.toolTimeout === undefined
        ? Option.getOrElse(toolEnv, () => DEFAULT_TOOL_TIMEOUT)
        : Duration.fromInputUnsafe(options.toolTimeout),
      maxOutputBytes: options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
      maxImageBytes: options.maxImageBytes ?? DEFAULT_MAX_IMAGE_BYTES,
      scrub
    }
  })
