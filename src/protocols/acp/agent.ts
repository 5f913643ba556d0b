/**
 * The loop as an ACP agent (Agent Client Protocol, spoken by Zed, JetBrains IDEs, Neovim plugins):
 * `initialize`, `session/new`, `session/load` (the stored conversation replayed as updates),
 * `session/prompt` (a turn, its events streamed as updates), `session/cancel` (stop now),
 * `session/set_mode` (the modes the command offers), and the loop's approvals asked as
 * `session/request_permission`.
 *
 * The SDK (`@agentclientprotocol/sdk`, an optional peer dependency) is handed in by the command
 * that loaded it, so nothing else loads it. ACP session ids are the loop's session keys: a session
 * made here is stored like any other and can be loaded after a restart.
 */
import { randomUUID } from "node:crypto"
import type * as Acp from "@agentclientprotocol/sdk"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import type { HookContext, HookToolCall } from "../../domain/Hook.ts"
import type { TurnResult } from "../../domain/Turn.ts"
import { AgentLoop } from "../../services/AgentLoop.ts"
import { SessionStore } from "../../services/SessionStore.ts"
import type * as Files from "./files.ts"
import type * as Terminal from "./terminal.ts"
import * as Updates from "./updates.ts"

/** The SDK's module, as `import("@agentclientprotocol/sdk")` gives it. */
export type Sdk = typeof Acp

/** What the agent says of itself, and its slash commands. */
export interface AgentOptions {
  readonly name: string
  readonly version: string
  /** Commands advertised to the client (`available_commands_update`) for every session. */
  readonly commands?: ReadonlyArray<Acp.AvailableCommand>
  /** Runs a prompt that starts with `/NAME` for a command of `commands`: the text of its turn, or `undefined` when it is not one. */
  readonly expand?: (text: string) => Effect.Effect<string | undefined>
  /** The file tools' bridge to the client's `fs/*` (`files.ts`), used for its sessions when the client offers them. */
  readonly files?: Files.Bridge
  /** `exec`'s bridge to the client's terminal (`terminal.ts`): given only when the user opted in, used when the client offers it. */
  readonly terminal?: Terminal.Bridge
  /**
   * The session modes offered (`session/set_mode`), the one every session starts in, and the one
   * whose turns plan first (`TurnOptions.planMode`: its plan is asked about with `reviewPlan`);
   * none when absent.
   */
  readonly modes?: { readonly available: ReadonlyArray<Acp.SessionMode>; readonly initial: string; readonly planning?: string }
}

/** How a plan's question is answered: the mode to go on in, or no (keep planning). */
export type PlanAnswer = { readonly _tag: "Accept"; readonly mode: "default" | "acceptEdits" } | { readonly _tag: "Refine" }

/** The answer an approval prompt reads (`approval.ts`): `y` once, `a` always (the suggested rule, this session), `n` no. */
export type Answer = "y" | "a" | "n"

/** One ACP session of this connection. */
interface Session {
  readonly key: string
  readonly cwd: string
  /** Its mode, one of `AgentOptions.modes`. */
  mode: string | undefined
  /** The prompt running, if any: its cancel flag. */
  prompting: { cancelled: boolean } | undefined
  /** The running prompt's tool calls the client was told of (`tool_call`), with what waits for that. */
  readonly told: Map<string, { readonly promise: Promise<void>; readonly resolve: () => void; done: boolean }>
}

/** How long an update about a tool call waits for the call's own `tool_call` to go out first. */
const TOLD_WAIT_MS = 2_000

/** The entry of `told` for a call, made when first asked about. */
const toldOf = (session: Session, toolCallId: string) => {
  let entry = session.told.get(toolCallId)
  if (entry === undefined) {
    let resolve!: () => void
    const promise = new Promise<void>((done) => (resolve = done))
    entry = { promise, resolve, done: false }
    session.told.set(toolCallId, entry)
  }
  return entry
}

/** The option ids offered with every permission request. */
const ALLOW_ONCE = "allow-once"
const ALLOW_ALWAYS = "allow-always"
const REJECT = "reject"
/** The option ids of a plan's question. */
const PLAN_ACCEPT_EDITS = "plan-accept-edits"
const PLAN_ACCEPT = "plan-accept"
const PLAN_KEEP = "plan-keep-planning"

/**
 * The agent: `connect` serves one client over `stream` until it goes away, and `askAbout` asks
 * that client about a call (the approval hook's question; `n` when there is no one to ask).
 */
export const make = (sdk: Sdk, options: AgentOptions) =>
  Effect.gen(function*() {
    const services = yield* Effect.context<AgentLoop | SessionStore>()
    const loop = Context.get(services, AgentLoop)
    const store = Context.get(services, SessionStore)
    const run = Effect.runPromiseWith(services)
    const sessions = new Map<string, Session>()
    let client: Acp.AgentContext | undefined
    /** What the client said it offers at `initialize`. */
    let offered: Acp.ClientCapabilities = {}

    /** The client's `fs/*` for a session of this connection, when it offers reading text files. */
    const editorFs = (sessionKey: string): Files.EditorFs | undefined => {
      const asking = client
      if (asking === undefined || !sessions.has(sessionKey) || offered.fs?.readTextFile !== true) return undefined
      return {
        read: (path, signal) =>
          asking.request(sdk.methods.client.fs.readTextFile, { sessionId: sessionKey, path }, { cancellationSignal: signal }).then((r) => r.content),
        write: offered.fs.writeTextFile === true
          ? (path, content) => asking.request(sdk.methods.client.fs.writeTextFile, { sessionId: sessionKey, path, content }).then(() => undefined)
          : undefined
      }
    }
    options.files?.attach(editorFs)

    /** The client's terminal for a session of this connection, when it offers one. */
    const editorTerminal = (sessionKey: string): Terminal.EditorTerminal | undefined => {
      const asking = client
      const session = sessions.get(sessionKey)
      if (asking === undefined || session === undefined || offered.terminal !== true) return undefined
      return {
        create: (params) => asking.createTerminal({ ...params, sessionId: sessionKey }),
        // after the call's own tool_call, which the turn's events bring (or a while at most)
        show: async (toolCallId, terminalId) => {
          const entry = toldOf(session, toolCallId)
          if (!entry.done) await Promise.race([entry.promise, new Promise((resolve) => setTimeout(resolve, TOLD_WAIT_MS))])
          await run(update(session, { sessionUpdate: "tool_call_update", toolCallId, content: [{ type: "terminal", terminalId }] }))
        }
      }
    }
    options.terminal?.attach(editorTerminal)

    const sessionOf = (id: string): Session => {
      const session = sessions.get(id)
      if (session === undefined) throw sdk.RequestError.sessionNotFound(id)
      return session
    }

    const update = (session: Session, update: Acp.SessionUpdate) =>
      Effect.promise(() => client?.notify(sdk.methods.client.session.update, { sessionId: session.key, update }) ?? Promise.resolve())

    /** The modes part of a `session/new` or `session/load` answer. */
    const modeState = (session: Session): { modes?: Acp.SessionModeState } =>
      options.modes === undefined || session.mode === undefined
        ? {}
        : { modes: { currentModeId: session.mode, availableModes: [...options.modes.available] } }

    const advertise = (session: Session) =>
      options.commands === undefined || options.commands.length === 0
        ? Effect.void
        : update(session, { sessionUpdate: "available_commands_update", availableCommands: [...options.commands] })

    /** The text of a prompt: its text blocks, linked resources by their URI, embedded ones by their text. */
    const textOf = (blocks: ReadonlyArray<Acp.ContentBlock>): string =>
      blocks.map((block) => {
        switch (block.type) {
          case "text":
            return block.text
          case "resource_link":
            return `@${block.uri}`
          case "resource":
            return "text" in block.resource ? `${block.resource.uri}:\n${block.resource.text}` : `@${block.resource.uri}`
          default:
            return ""
        }
      }).filter((part) => part !== "").join("\n")

    const stopReason = (session: Session, cancelled: boolean, result: TurnResult): Acp.StopReason => {
      if (cancelled) return "cancelled"
      switch (result.status) {
        case "completed":
          return "end_turn"
        case "max_iterations":
          return "max_turn_requests"
        case "interrupted":
          return "cancelled"
        default:
          throw sdk.RequestError.internalError({ sessionId: session.key, status: result.status }, result.error ?? `the turn ended ${result.status}`)
      }
    }

    /** A turn for the prompt, its root turn's events streamed as updates until its `TurnEnd`. */
    const prompt = (session: Session, text: string) =>
      Effect.scoped(Effect.gen(function*() {
        const subscription = yield* loop.subscribe({ strategy: "lossless" })
        const forward = yield* subscription.stream.pipe(
          Stream.filter((event) => event.sessionKey === session.key),
          Stream.takeUntil((event) => event._tag === "TurnEnd" && event.depth === 0),
          Stream.runForEach((event) =>
            Effect.forEach(Updates.fromEvent(event, session.cwd), (u) =>
              Effect.tap(update(session, u), () =>
                Effect.sync(() => {
                  if (u.sessionUpdate !== "tool_call") return
                  const entry = toldOf(session, u.toolCallId)
                  entry.done = true
                  entry.resolve()
                })), { discard: true })
          ),
          Effect.forkScoped
        )
        const expanded = options.expand === undefined ? undefined : yield* options.expand(text)
        const planning = options.modes?.planning !== undefined && session.mode === options.modes.planning
        const result = yield* loop.turn(session.key, expanded ?? text, planning ? { planMode: true } : {})
        yield* Fiber.join(forward)
        return result
      }))

    const agent = sdk.agent({ name: options.name })
      .onRequest(sdk.methods.agent.initialize, ({ params }) => {
        offered = params.clientCapabilities ?? {}
        return {
          protocolVersion: sdk.PROTOCOL_VERSION,
          agentCapabilities: {
            loadSession: true,
            promptCapabilities: { image: false, audio: false, embeddedContext: true }
          },
          agentInfo: { name: options.name, version: options.version },
          authMethods: []
        }
      })
      .onRequest(sdk.methods.agent.session.new, async ({ params }) => {
        const session: Session = { key: `acp-${randomUUID()}`, cwd: params.cwd, mode: options.modes?.initial, prompting: undefined, told: new Map() }
        sessions.set(session.key, session)
        await run(advertise(session))
        return { sessionId: session.key, ...modeState(session) }
      })
      .onRequest(sdk.methods.agent.session.load, async ({ params }) => {
        const history = await run(Effect.orElseSucceed(store.load(params.sessionId), () => []))
        if (history.length === 0) throw sdk.RequestError.sessionNotFound(params.sessionId)
        const session: Session = sessions.get(params.sessionId) ??
          { key: params.sessionId, cwd: params.cwd, mode: options.modes?.initial, prompting: undefined, told: new Map() }
        sessions.set(session.key, session)
        await run(Effect.andThen(
          Effect.forEach(Updates.fromHistory(history, params.cwd), (u) => update(session, u), { discard: true }),
          advertise(session)
        ))
        return modeState(session)
      })
      .onRequest(sdk.methods.agent.session.setMode, ({ params }) => {
        const session = sessionOf(params.sessionId)
        if (options.modes === undefined || !options.modes.available.some((mode) => mode.id === params.modeId)) {
          throw sdk.RequestError.invalidParams({ modeId: params.modeId }, `no such mode: ${params.modeId}`)
        }
        session.mode = params.modeId
        return {}
      })
      .onRequest(sdk.methods.agent.session.prompt, async ({ params }) => {
        const session = sessionOf(params.sessionId)
        if (session.prompting !== undefined) throw sdk.RequestError.invalidRequest({ sessionId: session.key }, "a prompt is already running in this session")
        const text = textOf(params.prompt)
        if (text.trim() === "") throw sdk.RequestError.invalidParams({ sessionId: session.key }, "the prompt has no text")
        const prompting = { cancelled: false }
        session.prompting = prompting
        try {
          const result = await run(prompt(session, text))
          return { stopReason: stopReason(session, prompting.cancelled, result) }
        } finally {
          session.prompting = undefined
          session.told.clear()
        }
      })
      .onNotification(sdk.methods.agent.session.cancel, async ({ params }) => {
        const session = sessions.get(params.sessionId)
        if (session?.prompting === undefined) return
        session.prompting.cancelled = true
        await run(Effect.ignore(loop.interruptNow(session.key)))
      })

    /** Serves the client on `stream` until it goes away; then every running prompt is stopped now (what its turn did is kept). */
    const connect = (stream: Acp.Stream) =>
      Effect.gen(function*() {
        const connection = agent.connect(stream)
        client = connection.client
        yield* Effect.promise(() => connection.closed)
        client = undefined
        yield* Effect.forEach([...sessions.values()], (session) => session.prompting === undefined ? Effect.void : Effect.ignore(loop.interruptNow(session.key)), {
          discard: true
        })
      })

    /** Asks the client about `call` of a session made here; `n` when there is none, or the client cancels or cannot be asked. */
    const askAbout = (context: HookContext, call: HookToolCall, remember: boolean): Effect.Effect<Answer> => {
      const session = sessions.get(context.sessionKey)
      const asking = client
      if (session === undefined || asking === undefined) return Effect.succeed("n")
      const options: Array<Acp.PermissionOption> = [
        { optionId: ALLOW_ONCE, name: "Allow once", kind: "allow_once" },
        ...(remember ? [{ optionId: ALLOW_ALWAYS, name: "Allow always (this session)", kind: "allow_always" } as const] : []),
        { optionId: REJECT, name: "Reject", kind: "reject_once" }
      ]
      const toolCall = Updates.toolCall({ id: call.id, name: call.name, arguments: JSON.stringify(call.arguments ?? {}) }, "pending", session.cwd)
      return Effect.tryPromise({
        // interrupted (stop now, the approval timeout): the client is told the request is cancelled
        try: (signal) =>
          asking.request(sdk.methods.client.session.requestPermission, { sessionId: session.key, toolCall, options }, { cancellationSignal: signal }),
        catch: (error) => error
      }).pipe(
        Effect.map((response): Answer => {
          const outcome = response.outcome
          if (outcome.outcome !== "selected") return "n"
          return outcome.optionId === ALLOW_ONCE ? "y" : outcome.optionId === ALLOW_ALWAYS ? "a" : "n"
        }),
        Effect.orElseSucceed((): Answer => "n")
      )
    }

    /** The mode of a session of this connection; `undefined` for another session. */
    const modeOf = (sessionKey: string): string | undefined => sessions.get(sessionKey)?.mode

    /**
     * Asks the client about a plan (`exit_plan_mode`): yes with edits accepted, yes, or keep
     * planning. Accepted, the session leaves plan mode for the mode chosen, and the client is told
     * (`current_mode_update`). No client to ask: keep planning.
     */
    const reviewPlan = (request: { readonly sessionKey: string; readonly toolCallId: string; readonly plan: string }): Effect.Effect<PlanAnswer> => {
      const session = sessions.get(request.sessionKey)
      const asking = client
      if (session === undefined || asking === undefined) return Effect.succeed({ _tag: "Refine" })
      const options: Array<Acp.PermissionOption> = [
        { optionId: PLAN_ACCEPT_EDITS, name: "Yes, and accept edits", kind: "allow_always" },
        { optionId: PLAN_ACCEPT, name: "Yes", kind: "allow_once" },
        { optionId: PLAN_KEEP, name: "No, keep planning", kind: "reject_once" }
      ]
      const toolCall: Acp.ToolCallUpdate = {
        toolCallId: request.toolCallId,
        title: "Ready to code? The plan",
        kind: "switch_mode",
        status: "pending",
        content: [{ type: "content", content: { type: "text", text: request.plan } }]
      }
      return Effect.tryPromise({
        try: (signal) => asking.request(sdk.methods.client.session.requestPermission, { sessionId: session.key, toolCall, options }, { cancellationSignal: signal }),
        catch: (error) => error
      }).pipe(
        Effect.flatMap((response): Effect.Effect<PlanAnswer> => {
          const outcome = response.outcome
          if (outcome.outcome !== "selected" || (outcome.optionId !== PLAN_ACCEPT && outcome.optionId !== PLAN_ACCEPT_EDITS)) return Effect.succeed({ _tag: "Refine" })
          const mode = outcome.optionId === PLAN_ACCEPT_EDITS ? "acceptEdits" : "default"
          session.mode = mode
          return Effect.as(update(session, { sessionUpdate: "current_mode_update", currentModeId: mode }), { _tag: "Accept", mode } as const)
        }),
        Effect.orElseSucceed((): PlanAnswer => ({ _tag: "Refine" }))
      )
    }

    return { connect, askAbout, modeOf, reviewPlan }
  })
