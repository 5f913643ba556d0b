/**
 * What Claude Code's settings keys beyond rules and hooks do here, taken from the files that may
 * set them (the user's always, a repository's once trusted; `permissionSources.ts` chooses them),
 * a later level winning:
 *
 * - `permissions.defaultMode` (and the flags `--permission-mode`, `--dangerously-skip-permissions`)
 *   becomes the approval policy (`approvalOf`); `bypassPermissions` always says so in a warning;
 * - `env` is set for the commands and hooks the loop starts (`applyEnv`), never for the loop's own
 *   credentials: a name that looks like a credential or that the loop reads for itself is skipped
 *   with a warning;
 * - `model` names the model when nothing of the loop's own does: an alias (`sonnet`) on any provider
 *   that has that family, another name on `anthropic`;
 * - `apiKeyHelper` is a command whose output is the provider's key when its own variables hold
 *   none (`helperKey`): kept `Redacted` and scrubbed from every text.
 */
import { execFile } from "node:child_process"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import { Secrets } from "../../services/Secrets.ts"
import { looksSecret } from "../../tools/secretEnv.ts"
import * as Agents from "../config/agents.ts"
import type { ApprovalPolicy, PermissionMode } from "../config/approvalPolicy.ts"
import type * as ClaudeSettings from "../config/claudeSettings.ts"
import { credentialVariables } from "../providers/providerList.ts"
import { fail } from "../terminal/failure.ts"
import type { AgentFlags } from "./flags.ts"
import type { Notice } from "./permissionSources.ts"

/** The last file's value of `key` that sets it, with the file. */
const last = <K extends "defaultMode" | "model" | "apiKeyHelper">(files: ReadonlyArray<ClaudeSettings.ClaudeSettings>, key: K) => {
  const file = files.findLast((candidate) => candidate[key] !== undefined)
  return file === undefined ? undefined : { value: file[key]!, path: file.path }
}

/** The approval a permission mode asks for, with the warning it gives (plan mode asks, as default does, once its plan is accepted). */
const ofMode = (mode: PermissionMode, source: string, notices: Array<Notice>): ApprovalPolicy => {
  switch (mode) {
    case "bypassPermissions":
      notices.push({ level: "warn", text: `${source}: bypassPermissions: every call that needs approval runs without asking; deny rules and the sandbox still hold` })
      return "approve"
    case "dontAsk":
      return "deny"
    default:
      return "ask"
  }
}

/**
 * The approval policy: `--yes`, `--dangerously-skip-permissions`, `--approval`, `--permission-mode`,
 * then the settings' `approval`, then Claude Code's `permissions.defaultMode`, else ask.
 */
export const approvalOf = (
  flags: Pick<AgentFlags, "yes" | "approval" | "permissionMode" | "dangerouslySkipPermissions">,
  approval: ApprovalPolicy | undefined,
  files: ReadonlyArray<ClaudeSettings.ClaudeSettings>,
  notices: Array<Notice>
): ApprovalPolicy => {
  if (flags.yes) return "approve"
  if (flags.dangerouslySkipPermissions) return ofMode("bypassPermissions", "--dangerously-skip-permissions", notices)
  if (Option.isSome(flags.approval)) return flags.approval.value
  if (Option.isSome(flags.permissionMode)) return ofMode(flags.permissionMode.value, "--permission-mode", notices)
  if (approval !== undefined) return approval
  const mode = last(files, "defaultMode")
  return mode === undefined ? "ask" : ofMode(mode.value, `${mode.path}: permissions.defaultMode`, notices)
}

/**
 * The permission mode a session starts in (the status line shows it, Shift-Tab changes it in
 * `chat`; `plan` makes turns plan first): `--dangerously-skip-permissions`, `--permission-mode`,
 * the settings' `permissions.defaultMode`, else `bypassPermissions` under `--yes` (or the settings'
 * `approval: approve`) and `default` otherwise.
 */
export const modeOf = (
  flags: Pick<AgentFlags, "permissionMode" | "dangerouslySkipPermissions">,
  approval: ApprovalPolicy,
  files: ReadonlyArray<ClaudeSettings.ClaudeSettings>
): PermissionMode => {
  if (flags.dangerouslySkipPermissions) return "bypassPermissions"
  if (Option.isSome(flags.permissionMode)) return flags.permissionMode.value
  const mode = last(files, "defaultMode")?.value
  if (mode !== undefined && (mode !== "bypassPermissions" || approval === "approve")) return mode
  return approval === "approve" ? "bypassPermissions" : "default"
}

/** The loop's own variables: its settings (`AGENT_LOOP_*`) and the providers' credentials. */
const ownVariable = (name: string): boolean => name.startsWith("AGENT_LOOP_") || credentialVariables().includes(name)

/** The `env` of the files, later ones winning, without what may not be set (each skipped name a warning). */
export const envOf = (files: ReadonlyArray<ClaudeSettings.ClaudeSettings>, notices: Array<Notice>): Readonly<Record<string, string>> => {
  const merged: Record<string, { readonly value: string; readonly path: string }> = {}
  for (const file of files) for (const [name, value] of Object.entries(file.env ?? {})) merged[name] = { value, path: file.path }
  const env: Record<string, string> = {}
  for (const [name, { path, value }] of Object.entries(merged)) {
    if (ownVariable(name) || looksSecret(name, value)) {
      notices.push({
        level: "warn",
        text: `${path}: env.${name} is not set: it looks like a credential or is one the loop reads for itself, and commands and hooks are never given those`
      })
    } else env[name] = value
  }
  return env
}

/** Sets `env` in the process's environment, which the commands and hooks it starts inherit (the provider was chosen already). */
export const applyEnv = (env: Readonly<Record<string, string>>): void => {
  for (const [name, value] of Object.entries(env)) process.env[name] = value
}

/**
 * Claude Code's `model` for the provider in use: an alias (`sonnet`, `opus`, `haiku`) is that
 * family's newest model on the provider (`Agents.resolveModel`; one line says so when it has none),
 * another name is taken on `anthropic` only, whose names Claude Code's are.
 */
export const modelOf = (files: ReadonlyArray<ClaudeSettings.ClaudeSettings>, provider: Agents.ProviderModels, notices: Array<Notice>): string | undefined => {
  const model = last(files, "model")
  if (model === undefined) return undefined
  if (!Agents.MODEL_ALIASES.includes(model.value)) return provider.name === "anthropic" ? model.value : undefined
  const resolved = Agents.resolveModel(model.value, provider)
  if (Result.isSuccess(resolved)) return resolved.success
  notices.push({ level: "warn", text: `${model.path}: ${resolved.failure}; not used` })
  return undefined
}

/** How long an `apiKeyHelper` may take. */
const HELPER_TIMEOUT_MS = 30_000

/**
 * The key the last `apiKeyHelper` of `files` prints (its first line, trimmed), run with `sh -c` in
 * `workspace`, registered as a secret; `undefined` when no file sets one. A helper that fails or prints
 * nothing fails with one line naming the file, never its output.
 */
export const helperKey = (files: ReadonlyArray<ClaudeSettings.ClaudeSettings>, workspace: string) =>
  Effect.gen(function*() {
    const helper = last(files, "apiKeyHelper")
    if (helper === undefined) return undefined
    const output = yield* Effect.callback<string, string>((resume) => {
      const child = execFile("/bin/sh", ["-c", helper.value], { cwd: workspace, timeout: HELPER_TIMEOUT_MS, maxBuffer: 64 * 1024 }, (error, stdout) => {
        resume(error === null ? Effect.succeed(stdout) : Effect.fail(error.killed ? `timed out after ${HELPER_TIMEOUT_MS / 1000} s` : `exited with ${error.code ?? error.signal}`))
      })
      return Effect.sync(() => child.kill())
    }).pipe(Effect.catch((reason) => fail(`${helper.path}: apiKeyHelper ${reason}`)))
    const line = output.split("\n")[0]?.trim() ?? ""
    if (line === "") return yield* fail(`${helper.path}: apiKeyHelper printed no key`)
    const key = Redacted.make(line)
    ;(yield* Secrets).add([key])
    return key
  })
