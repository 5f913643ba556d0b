/**
 * `agent-loop acp`: the loop as an Agent Client Protocol agent on stdin and stdout, for editors
 * that speak ACP (Zed, JetBrains IDEs, Neovim plugins): `protocols/acp/agent.ts`. Stdout carries
 * the protocol only; what the CLI says goes to stderr. Approvals are asked in the editor
 * (`session/request_permission`) under the same rules as at a terminal; the custom slash commands
 * are advertised as the session's commands; Claude Code's permission modes the loop has are the
 * session's modes.
 */
import { Readable, Writable } from "node:stream"
import * as Effect from "effect/Effect"
import packageJson from "../../../package.json" with { type: "json" }
import { ToolRegistry } from "../../services/ToolRegistry.ts"
import * as AcpAgent from "../../protocols/acp/agent.ts"
import * as AcpFiles from "../../protocols/acp/files.ts"
import * as AcpTerminal from "../../protocols/acp/terminal.ts"
import type { ApprovalPolicy, PermissionMode } from "../config/approvalPolicy.ts"
import * as Approval from "../permissions/approval.ts"
import * as App from "../runtime/app.ts"
import * as PlanSlot from "../runtime/planSlot.ts"
import type { AgentFlags } from "../settings/flags.ts"
import * as Settings from "../settings/settings.ts"
import { fail } from "../terminal/failure.ts"
import { Screen } from "../terminal/screen.ts"
import * as CommandPrompt from "./commandPrompt.ts"
import * as Slash from "./slashCommands.ts"

/** What is said when the optional SDK is not installed. */
export const SDK_MISSING = "agent-loop acp needs the Agent Client Protocol SDK: npm install @agentclientprotocol/sdk"

/**
 * The session modes: Claude Code's permission modes the loop has. `acceptEdits` is `default` here,
 * since edits inside the workspace never ask (writes into protected locations still do); in `plan`
 * the model only reads until the editor's user accepts its plan, and the session then goes on in
 * the mode they chose.
 */
export const MODES = [
  { id: "default", name: "Default", description: "Calls that need approval are asked about" },
  {
    id: "acceptEdits",
    name: "Accept edits",
    description: "Edits inside the workspace run without asking (as in default: agent-loop never asks about them); other calls are asked about"
  },
  {
    id: "plan",
    name: "Plan",
    description: "The model only reads and plans; its plan is shown to you to accept (then it carries it out) or to keep planning"
  },
  {
    id: "bypassPermissions",
    name: "Bypass permissions",
    description: "Every call that needs approval runs without asking; deny rules and the sandbox still hold"
  }
] as const

/** The mode a session starts in: the command's (`--permission-mode`, the settings), where it is one of `MODES`. */
export const initialMode = (mode: PermissionMode, approval: ApprovalPolicy): string =>
  MODES.some((offered) => offered.id === mode) ? mode : approval === "approve" ? "bypassPermissions" : "default"

/** The approval policy of a mode, from the one the command was started with (`--yes`, `--approval`, `--permission-mode`, the settings). */
export const policyOfMode = (mode: string | undefined, started: ApprovalPolicy): ApprovalPolicy | undefined => {
  if (mode === undefined) return undefined
  if (mode === "bypassPermissions") return "approve"
  // default and acceptEdits ask, or deny as the command was told to
  return started === "approve" ? "ask" : started
}

/** The flags of `acp` alone. */
export interface AcpFlags {
  /** Run `exec`'s commands in the editor's terminal when it offers one (outside the sandbox). */
  readonly clientTerminal: boolean
}

/** `agent-loop acp`: serves one editor on stdio until it closes the connection. */
export const acp = (flags: AgentFlags, acpFlags: AcpFlags = { clientTerminal: false }) =>
  Effect.gen(function*() {
    const sdk = yield* Effect.tryPromise(() => import("@agentclientprotocol/sdk")).pipe(Effect.catch(() => fail(SDK_MISSING, 1)))
    const settings = yield* Settings.resolve(flags)
    yield* Settings.announce(settings)
    // the file tools read and write through the editor for its sessions, when it offers fs/*
    const files = AcpFiles.bridge()
    // exec's commands in the editor's terminal, only where the user asked for it: they leave the sandbox
    const terminal = acpFlags.clientTerminal ? AcpTerminal.bridge() : undefined
    // a plan made in plan mode is asked about in the editor, once the agent is there
    const plans = PlanSlot.slot()
    yield* Effect.scoped(Effect.gen(function*() {
      const screen = yield* Screen
      if (terminal !== undefined) {
        yield* screen.line("agent-loop: warn: --client-terminal: commands run in the editor's terminal when it offers one, outside agent-loop's sandbox")
      }
      const registry = yield* ToolRegistry
      const expand = (text: string): Effect.Effect<string | undefined> => {
        const parsed = Slash.parse(text.trim(), settings.commands)
        if (parsed._tag !== "Custom") return Effect.succeed(undefined)
        // a command that cannot be expanded is sent as typed
        return CommandPrompt.make(parsed.command, parsed.args, settings).pipe(
          Effect.provideService(ToolRegistry, registry),
          Effect.orElseSucceed(() => undefined)
        )
      }
      const agent = yield* AcpAgent.make(sdk, {
        name: "agent-loop",
        version: packageJson.version,
        commands: settings.commands.map((command) => ({
          name: command.name,
          description: command.description ?? "(custom command)",
          ...(command.argumentHint === undefined ? {} : { input: { hint: command.argumentHint } })
        })),
        expand,
        files,
        ...(terminal === undefined ? {} : { terminal }),
        modes: { available: MODES, initial: initialMode(settings.permissionMode, settings.approval), planning: "plan" }
      })
      plans.set((request) =>
        Effect.map(agent.reviewPlan(request), (answer) => answer._tag === "Accept" ? { _tag: "Accept", mode: answer.mode } : { _tag: "Refine" })
      )
      // asked in the editor: `ask` only says that someone can be asked
      // a command in the editor's terminal is not confined: the sandbox's auto-allow does not hold for it
      const approving = terminal === undefined ? settings : { ...settings, sandbox: { ...settings.sandbox, autoAllowExec: false } }
      yield* Approval.register(approving, screen, Effect.succeed(undefined), agent.askAbout, (key) => policyOfMode(agent.modeOf(key), settings.approval))
      const stream = sdk.ndJsonStream(Writable.toWeb(process.stdout) as WritableStream<Uint8Array>, Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>)
      yield* agent.connect(stream)
    })).pipe(Effect.provide(App.layer(settings, { files: files.files, planReview: plans.review, ...(terminal === undefined ? {} : { terminal: terminal.terminal }) })))
  })
