/**
 * effect-agent-loop: an event-driven, hookable, interruptible, steerable LLM agent loop on Effect 4.
 *
 * Public API only; everything else is internal.
 */
export * as AgentLoopConfig from "./domain/Config.ts"
export * as Checkpoint from "./domain/Checkpoint.ts"
export * from "./domain/errors.ts"
export * as AgentEvent from "./domain/Event.ts"
export type { AgentEvent as Event, EventKind } from "./domain/Event.ts"
export * as Hook from "./domain/Hook.ts"
export * as Message from "./domain/Message.ts"
export * as ModelOptions from "./domain/ModelOptions.ts"
export * as Models from "./domain/Models.ts"
export * as ProviderTypes from "./domain/Provider.ts"
export * as SessionLog from "./domain/SessionLog.ts"
export type { Compaction, SessionEntry } from "./domain/SessionLog.ts"
export * as SubTurn from "./domain/SubTurn.ts"
export * as Tool from "./domain/Tool.ts"
export * as Turn from "./domain/Turn.ts"
export type { Inbound, Outbound, TurnInfo, TurnResult, TurnStatus } from "./domain/Turn.ts"
export * as Usage from "./domain/Usage.ts"

export { AgentLoop, type AgentLoopShape, type TurnOptions, type TypedTurnResult } from "./services/AgentLoop.ts"
export { CurrentTurn, type CurrentTurnShape } from "./services/CurrentTurn.ts"
export {
  type DropCounts,
  EventBus,
  type EventBusShape,
  isLifecycle,
  lifecycleKinds,
  type OverflowStrategy,
  type SubscribeOptions,
  type Subscription
} from "./services/EventBus.ts"
export {
  type Before as FileBefore,
  type FileChange,
  FileHistory,
  FileHistoryError,
  type FileHistoryShape,
  NothingToUndo,
  type Refused as UndoRefused,
  type TurnChanges,
  type UndoResult
} from "./services/FileHistory.ts"
export { Hooks, type HooksShape, type Named, type Outcome as HookOutcome, type RunPoint } from "./services/Hooks.ts"
export { LoopConfig } from "./services/LoopConfig.ts"
export { Provider, type ChatReply, type ProviderShape, type WholeReply } from "./services/Provider.ts"
export {
  Sandbox,
  type SandboxedCommand,
  SandboxError,
  type SandboxErrorReason,
  type SandboxKind,
  type SandboxOutcome,
  type SandboxRequest,
  type SandboxReview,
  type SandboxShape,
  type SandboxStatus
} from "./services/Sandbox.ts"
export { Secrets, type SecretsShape } from "./services/Secrets.ts"
export { type SessionInfo, SessionStore, type SessionStoreShape } from "./services/SessionStore.ts"
export { CommitTicket, type CommittedTurn, type SessionFencing, type Ticket as CommitTicketShape } from "./services/SessionFencing.ts"
export { ToolRegistry, type ToolRegistryShape } from "./services/ToolRegistry.ts"

export * as AiToolkit from "./layers/AiToolkit.ts"
export * as EventBusLive from "./layers/EventBus.ts"
export * as FileHistoryDir from "./layers/FileHistoryDir.ts"
export * as FileHooks from "./layers/FileHooks.ts"
export * as HooksLive from "./layers/Hooks.ts"
export * as Inspector from "./inspector/Inspector.ts"
export * as LoopConfigLive from "./layers/LoopConfig.ts"
export * as McpTools from "./layers/McpTools.ts"
export * as Metrics from "./layers/Metrics.ts"
export * as Anthropic from "./layers/providers/Anthropic.ts"
export * as Azure from "./layers/providers/Azure.ts"
export * as Bedrock from "./layers/providers/Bedrock.ts"
export * as Gemini from "./layers/providers/Gemini.ts"
export { fromLanguageModel } from "./layers/providers/LanguageModel.ts"
export * as LanguageModelProvider from "./layers/providers/LanguageModel.ts"
export * as OpenAiCompatible from "./layers/providers/OpenAiCompatible.ts"
export * as OpenAiResponses from "./layers/providers/OpenAiResponses.ts"
export * as Presets from "./layers/providers/presets.ts"
export * as Replay from "./layers/providers/Replay.ts"
export * as Scripted from "./layers/providers/Scripted.ts"
export * as Vertex from "./layers/providers/Vertex.ts"
export { ScriptedLog } from "./layers/providers/Scripted.ts"
export * as SandboxAuto from "./layers/sandbox/SandboxAuto.ts"
export * as SandboxLinux from "./layers/sandbox/SandboxLinux.ts"
export * as SandboxMacos from "./layers/sandbox/SandboxMacos.ts"
export * as SandboxNone from "./layers/sandbox/SandboxNone.ts"
export * as SandboxPolicy from "./layers/sandbox/policy.ts"
export * as SecretsLive from "./layers/Secrets.ts"
export * as SessionStoreJsonl from "./layers/SessionStoreJsonl.ts"
export * as SessionStoreMemory from "./layers/SessionStoreMemory.ts"
export * as SessionStoreSql from "./layers/SessionStoreSql.ts"
export * as NodeSqliteClient from "./layers/sql/NodeSqliteClient.ts"
export * as ToolRegistryLive from "./layers/ToolRegistry.ts"
export * as WorkspaceLive from "./layers/Workspace.ts"
/** @deprecated Use `WorkspaceLive.make`. */
export { make as makeWorkspace } from "./layers/Workspace.ts"

export * as AgentLoopCluster from "./cluster/AgentLoopCluster.ts"
export * as AgentLoopProgram from "./programs/AgentLoopProgram.ts"
export * as AgentLoopLive from "./programs/AgentLoopLive.ts"

export * from "./tools/index.ts"
export { type AgentDefinition, NamedSubagentParameters, SpawnParameters, SubagentParameters, spawn, subagent, subagentWith } from "./tools/subagent.ts"
