/**
 * The loop as an MCP server: any MCP client (Claude Code, Cursor, Codex, …) can call the agent as a
 * tool. One tool, `run_agent` {prompt, session?, agent?}: a turn of the session (a new one when
 * none is named), as one of the exposed named agents when `agent` names one (its system prompt,
 * tools and model), its final answer as the result, progress notifications while it runs (when the
 * client asks for them with a progress token), and the client's cancellation mapped to stop now.
 * `askAbout` is the approval hook's question (`cli/permissions/approval.ts`): asked of the client
 * that started the turn by elicitation (`approvals.ts`), within the approval timeout; a client that
 * did not declare elicitation cannot be asked, so the call is denied and the result says so.
 *
 * The official SDK (`@modelcontextprotocol/sdk`, an optional peer dependency) is handed in by the
 * command that loaded it, so nothing else loads it.
 */
import { randomUUID } from "node:crypto"
import type * as McpServerSdk from "@modelcontextprotocol/sdk/server/index.js"
import type * as McpTypes from "@modelcontextprotocol/sdk/types.js"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { AgentEvent } from "../../domain/Event.ts"
import * as Hook from "../../domain/Hook.ts"
import { AgentLoop } from "../../services/AgentLoop.ts"
import type { AgentDefinition } from "../../tools/subagent.ts"
import * as Approvals from "./approvals.ts"

/** The SDK's modules this server uses, as `import()` gives them. */
export interface Sdk {
  readonly server: typeof McpServerSdk
  readonly types: typeof McpTypes
}

/** The tool's name. */
export const RUN_AGENT = "run_agent"

/** The tool as `tools/list` shows it: with `agent` when there are named agents to offer. */
const runAgentTool = (agents: ReadonlyArray<AgentDefinition>) => ({
  name: RUN_AGENT,
  title: "Run the agent",
  description:
    "Runs one turn of the agent-loop agent on a prompt and returns its final answer. Pass the same session to continue a conversation; without one a new session is made (its key is in the result)." +
    (agents.length === 0 ? "" : ` Pass agent to run it as one of these agents:\n${agents.map((agent) => `- ${agent.name}: ${agent.description}`).join("\n")}`),
  inputSchema: {
    type: "object" as const,
    properties: {
      prompt: { type: "string", description: "What to ask the agent" },
      session: { type: "string", description: "A session key to continue (default: a new session)" },
      ...(agents.length === 0 ? {} : {
        agent: { type: "string", enum: agents.map((agent) => agent.name), description: "A named agent to run it as (default: the agent itself)" }
      })
    },
    required: ["prompt"]
  }
})

/** What a progress notification says of an event, if anything. */
const progressOf = (event: AgentEvent): string | undefined => {
  if (event.depth !== 0) return undefined
  switch (event._tag) {
    case "LLMRequest":
      return "thinking"
    case "ToolExecStart":
      return `running ${event.toolName}`
    case "ToolExecEnd":
      return `${event.toolName} ${event.isError ? "failed" : "done"}`
    default:
      return undefined
  }
}

/** The arguments of a call, checked: a clear error for anything else. */
const argsOf = (
  raw: unknown,
  agents: ReadonlyArray<AgentDefinition>
): { readonly prompt: string; readonly session: string | undefined; readonly agent: AgentDefinition | undefined } | string => {
  const args = typeof raw === "object" && raw !== null ? raw as Record<string, unknown> : {}
  if (typeof args.prompt !== "string" || args.prompt.trim() === "") return "prompt: a non-empty string is required"
  if (args.session !== undefined && (typeof args.session !== "string" || args.session.trim() === "")) return "session: a non-empty string when given"
  const agent = agents.find((candidate) => candidate.name === args.agent)
  if (args.agent !== undefined && agent === undefined) {
    return agents.length === 0 ? "agent: no named agents are offered here" : `agent: one of ${agents.map((a) => a.name).join(", ")}`
  }
  return { prompt: args.prompt, session: args.session as string | undefined, agent }
}

/**
 * The server: `connection()` is a server for one client (stdio has one; streamable HTTP one per
 * MCP session), `serve` answers one client on `transport` until it closes; a running call is then
 * stopped now.
 */
export const make = (
  sdk: Sdk,
  options: {
    readonly name: string
    readonly version: string
    /** The named agents `run_agent` offers (`agent`); none when absent. */
    readonly agents?: ReadonlyArray<AgentDefinition>
    /** How long a question about a call waits for the client's answer (the loop's approval timeout). */
    readonly approvalTimeout: Duration.Duration
    /** Says a line to the user (stderr): calls denied without asking. */
    readonly say?: (line: string) => Effect.Effect<void>
  }
) =>
  Effect.gen(function*() {
    const services = yield* Effect.context<AgentLoop>()
    const loop = Context.get(services, AgentLoop)
    const run = Effect.runPromiseWith(services)
    const running = new Set<string>()
    /** The call running each session's turn: the client to ask about its tool calls, and how many could not be asked. */
    const asking = new Map<string, { readonly server: McpServerSdk.Server; readonly requestId: McpTypes.RequestId; unasked: number }>()
    const say = options.say ?? (() => Effect.void)
    const agents = options.agents ?? []
    /** The named agent each running session's turn is run as: its system prompt replaces the agent's own. */
    const runningAs = new Map<string, AgentDefinition>()
    if (agents.length > 0) {
      yield* loop.registerHook(
        Hook.make({
          beforeTurn: ({ context }) => {
            const agent = context.depth === 0 ? runningAs.get(context.sessionKey) : undefined
            return agent === undefined ? undefined : Hook.modify({ systemPrompt: agent.prompt })
          }
        }),
        { name: "mcp-named-agent", source: "agent-loop mcp serve" }
      )
    }

    const connection = () => {
      const server = new sdk.server.Server({ name: options.name, version: options.version }, { capabilities: { tools: {} } })

      server.setRequestHandler(sdk.types.ListToolsRequestSchema, () => ({ tools: [runAgentTool(agents)] }))
      server.setRequestHandler(sdk.types.CallToolRequestSchema, async (request, extra) => {
        if (request.params.name !== RUN_AGENT) throw new sdk.types.McpError(sdk.types.ErrorCode.InvalidParams, `unknown tool: ${request.params.name}`)
        const args = argsOf(request.params.arguments, agents)
        if (typeof args === "string") throw new sdk.types.McpError(sdk.types.ErrorCode.InvalidParams, `${RUN_AGENT}: ${args}`)
        const sessionKey = args.session ?? `mcp-${randomUUID()}`
        if (running.has(sessionKey)) throw new sdk.types.McpError(sdk.types.ErrorCode.InvalidRequest, `session ${sessionKey} is already running a turn`)
        const token = request.params._meta?.progressToken
        running.add(sessionKey)
        const call = { server, requestId: extra.requestId, unasked: 0 }
        asking.set(sessionKey, call)
        if (args.agent !== undefined) runningAs.set(sessionKey, args.agent)
        // the client cancels (or goes away): the turn stops now, keeping what it did
        const stop = () => void run(Effect.ignore(loop.interruptNow(sessionKey)))
        extra.signal.addEventListener("abort", stop, { once: true })
        try {
          const result = await run(Effect.scoped(Effect.gen(function*() {
            if (token !== undefined) {
              let progress = 0
              const subscription = yield* loop.subscribe({ strategy: "lossless" })
              yield* subscription.stream.pipe(
                Stream.filter((event) => event.sessionKey === sessionKey),
                Stream.takeUntil((event) => event._tag === "TurnEnd" && event.depth === 0),
                Stream.runForEach((event) => {
                  const message = progressOf(event)
                  if (message === undefined) return Effect.void
                  progress++
                  return Effect.promise(() =>
                    extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress, message } }).catch(() => undefined)
                  )
                }),
                Effect.forkScoped
              )
            }
            const agent = args.agent
            return yield* loop.turn(sessionKey, args.prompt, {
              ...(agent?.model === undefined ? {} : { model: agent.model }),
              ...(agent?.tools === undefined ? {} : { tools: agent.tools })
            })
          })))
          const answer = result.finalMessage?.content ?? result.error ?? `(the turn ended ${result.status})`
          return {
            content: [
              { type: "text" as const, text: answer },
              ...(call.unasked === 0 ? [] : [{ type: "text" as const, text: Approvals.unaskedNote(call.unasked) }])
            ],
            structuredContent: {
              session: sessionKey,
              status: result.status,
              turnId: result.turnId,
              ...(args.agent === undefined ? {} : { agent: args.agent.name }),
              ...(call.unasked === 0 ? {} : { unaskedApprovals: call.unasked })
            },
            isError: result.status !== "completed"
          }
        } finally {
          extra.signal.removeEventListener("abort", stop)
          running.delete(sessionKey)
          asking.delete(sessionKey)
          runningAs.delete(sessionKey)
        }
      })

      return server
    }

    /** Serves one client on `transport` until it closes. */
    const serve = (transport: Parameters<McpServerSdk.Server["connect"]>[0]) =>
      Effect.gen(function*() {
        const server = connection()
        let onClose = () => {}
        const closed = new Promise<void>((resolve) => (onClose = resolve))
        server.onclose = () => onClose()
        yield* Effect.promise(() => server.connect(transport))
        yield* Effect.promise(() => closed)
        yield* Effect.forEach([...running], (key) => Effect.ignore(loop.interruptNow(key)), { discard: true })
      })

    /** Stops every running call now (the process is ending). */
    const stopAll = Effect.suspend(() => Effect.forEach([...running], (key) => Effect.ignore(loop.interruptNow(key)), { discard: true }))

    /**
     * The approval hook's question about a call of a running turn: an elicitation to the client that
     * started it, answered as at the CLI's prompt; a denial with its reason when the client cannot be
     * asked, does not answer within the approval timeout, or asking fails.
     */
    const askAbout = (context: Hook.HookContext, call: Hook.HookToolCall, remember: boolean): Effect.Effect<string | Hook.Deny> => {
      const turn = asking.get(context.sessionKey)
      if (turn === undefined || turn.server.getClientCapabilities()?.elicitation?.form === undefined) {
        if (turn !== undefined) turn.unasked++
        return Effect.as(
          say(`agent-loop: denied ${Approvals.describeCall(call)}: it needs approval, and the MCP client cannot be asked (it does not support elicitation; pass --yes to approve)`),
          Hook.deny(Approvals.NO_ELICITATION_REASON)
        )
      }
      const timeout = Duration.toMillis(options.approvalTimeout)
      return Effect.tryPromise({
        // interrupted (stop now, the hook runner's limit): the SDK tells the client the request is cancelled
        try: (signal) => turn.server.elicitInput(Approvals.question(call, remember), { relatedRequestId: turn.requestId, signal, timeout }),
        catch: (error) => error
      }).pipe(
        Effect.map((result) => Approvals.answerOf(result, remember)),
        Effect.catch((error) => {
          if (error instanceof sdk.types.McpError && error.code === sdk.types.ErrorCode.RequestTimeout) {
            return Effect.as(
              say(`agent-loop: denied ${Approvals.describeCall(call)}: no answer within the approval timeout`),
              Hook.deny(Approvals.timedOutReason(Math.round(timeout / 1000)))
            )
          }
          return Effect.succeed(Hook.deny(Approvals.failedReason(error instanceof Error ? error.message : String(error))))
        })
      )
    }

    return { connection, serve, stopAll, askAbout }
  })
