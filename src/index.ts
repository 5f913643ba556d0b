/**
 * effect-agent-loop: an event-driven, hookable, interruptible, steerable LLM agent loop on Effect 4.
 *
 * The public API, listed by name: what users need and nothing else (test hooks are in
 * `effect-agent-loop/testing`). Each thing has one name and one place: a namespace's members are
 * reached through it. A namespace is its module itself when every export of the module is public,
 * else its list in `api/`. `test/package/exports.test.ts` holds the whole list, so a change to it
 * is a decision.
 */

// ---- Data: messages, events, configuration, results, errors --------------------------------------
export * as AgentEvent from "./api/AgentEvent.ts"
export * as AgentLoopConfig from "./api/AgentLoopConfig.ts"
export * as Checkpoint from "./api/Checkpoint.ts"
export * as Hook from "./api/Hook.ts"
export * as Message from "./api/Message.ts"
export * as ModelOptions from "./api/ModelOptions.ts"
export * as Models from "./domain/Models.ts"
export * as ProviderTypes from "./domain/Provider.ts"
export * as SessionLog from "./api/SessionLog.ts"
export * as SubTurn from "./domain/SubTurn.ts"
export * as Tool from "./api/Tool.ts"
export * as Turn from "./api/Turn.ts"
export * as Usage from "./domain/Usage.ts"
export {
  CheckpointStale,
  CompactionFailed,
  ConcurrencyTimeout,
  ContentRejected,
  ContextLengthExceeded,
  DepthLimitExceeded,
  InvalidConfig,
  InvalidRewind,
  InvalidSubTurnConfig,
  MalformedResponse,
  NoActiveTurn,
  OutputInvalid,
  OutputUnavailable,
  ProviderRejected,
  type ProviderError,
  ProviderUnavailable,
  RateLimited,
  ReplayMismatch,
  ResponseTooLarge,
  SessionFenced,
  SessionStoreError,
  SteeringQueueFull,
  SubTurnBlocked,
  SubTurnStopped,
  ToolError,
  TurnAborted,
  TurnBlocked,
  TurnDefect,
  TurnFailure
} from "./domain/errors.ts"

// ---- Services: one per capability ---------------------------------------------------------------
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
export { EventJournal, type EventJournalShape } from "./services/EventJournal.ts"
export { type ExternalCommand, type ExternalExit, ExternalTerminal, type ExternalTerminalShape } from "./services/ExternalTerminal.ts"
export {
  type FileBefore,
  type FileChange,
  FileHistory,
  FileHistoryError,
  type FileHistoryShape,
  NothingToUndo,
  type TurnFileChanges,
  type UndoRefused,
  type UndoResult
} from "./services/FileHistory.ts"
export { type HookInfo, type HookOutcome, Hooks, type HooksShape, type Named, type RunPoint } from "./services/Hooks.ts"
export { LoopConfig } from "./services/LoopConfig.ts"
export { type ChatReply, Provider, type ProviderShape, type WholeReply } from "./services/Provider.ts"
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
export { CommitTicket, type CommitTicketShape, type CommittedTurn, type SessionFencing } from "./services/SessionFencing.ts"
export {
  type EventJournalStore,
  type PausedTurnStore,
  rewindSession,
  type SessionInfo,
  SessionStore,
  type SessionStoreShape
} from "./services/SessionStore.ts"
export { ToolRegistry, type ToolRegistryShape } from "./services/ToolRegistry.ts"
export {
  type OpenFileRequest,
  type PathRule,
  type PathRuleVerdict,
  Workspace,
  type WorkspaceFile,
  type WorkspaceFiles,
  type WorkspaceShape
} from "./services/Workspace.ts"

// ---- Layers: the services' implementations -------------------------------------------------------
export * as AiToolkit from "./layers/AiToolkit.ts"
export * as EventBusLive from "./layers/EventBus.ts"
export * as EventJournalLive from "./layers/EventJournal.ts"
export * as FileHistoryDir from "./api/FileHistoryDir.ts"
export * as FileHooks from "./layers/FileHooks.ts"
export * as HooksLive from "./layers/Hooks.ts"
export * as Inspector from "./api/Inspector.ts"
export * as LoopConfigLive from "./layers/LoopConfig.ts"
export * as McpTools from "./api/McpTools.ts"
export * as Metrics from "./api/Metrics.ts"
export * as NodeSqliteClient from "./layers/sql/NodeSqliteClient.ts"
export * as SecretsLive from "./layers/Secrets.ts"
export * as Server from "./api/Server.ts"
export * as SessionStoreJsonl from "./layers/SessionStoreJsonl.ts"
export * as SessionStoreMemory from "./layers/SessionStoreMemory.ts"
export * as SessionStoreSql from "./layers/SessionStoreSql.ts"
export * as ToolRegistryLive from "./layers/ToolRegistry.ts"
export * as WorkspaceLive from "./layers/Workspace.ts"
// providers
export * as Anthropic from "./layers/providers/Anthropic.ts"
export * as Azure from "./api/Azure.ts"
export * as Bedrock from "./api/Bedrock.ts"
export * as Gemini from "./api/Gemini.ts"
export * as LanguageModelProvider from "./api/LanguageModelProvider.ts"
export * as OpenAiCompatible from "./layers/providers/OpenAiCompatible.ts"
export * as OpenAiResponses from "./layers/providers/OpenAiResponses.ts"
export * as Presets from "./layers/providers/presets.ts"
export * as Replay from "./api/Replay.ts"
export * as Scripted from "./api/Scripted.ts"
export * as Vertex from "./api/Vertex.ts"
// sandboxes
export * as SandboxAuto from "./layers/sandbox/SandboxAuto.ts"
export * as SandboxLinux from "./layers/sandbox/SandboxLinux.ts"
export * as SandboxMacos from "./api/SandboxMacos.ts"
export * as SandboxNone from "./layers/sandbox/SandboxNone.ts"

// ---- The loop, and across processes ------------------------------------------------------------
export * as AgentLoopCluster from "./api/AgentLoopCluster.ts"
export * as AgentLoopLive from "./programs/AgentLoopLive.ts"
export * as AgentLoopProgram from "./api/AgentLoopProgram.ts"

// ---- The built-in tools ---------------------------------------------------------------------------
export { builtinTools, type BuiltinToolRequirements, type BuiltinToolsOptions } from "./tools/index.ts"
export { BuiltinToolName } from "./tools/builtinToolName.ts"
export { editFile, type EditFileOptions, EditFileParameters, makeEditFile } from "./tools/editFile.ts"
export { exec, type ExecOptions, ExecParameters, makeExec, SANDBOX_DENIED_MARKER } from "./tools/exec.ts"
export {
  EXIT_PLAN_MODE,
  ExitPlanModeParameters,
  makeExitPlanMode,
  type PlanDecision,
  type PlanRequest,
  type PlanReviewer
} from "./tools/exitPlanMode.ts"
export { glob, type GlobOptions, GlobParameters, makeGlob } from "./tools/glob.ts"
export { grep, type GrepOptions, GrepParameters, makeGrep } from "./tools/grep.ts"
export { listDir, type ListDirOptions, ListDirParameters, makeListDir } from "./tools/listDir.ts"
export { makeReadFile, readFile, type ReadFileOptions, ReadFileParameters } from "./tools/readFile.ts"
export { makeWebFetch, webFetch, type WebFetchOptions, WebFetchParameters } from "./tools/webFetch.ts"
export { makeWriteFile, writeFile, type WriteFileOptions, WriteFileParameters } from "./tools/writeFile.ts"
export { gitHooksDirectory, isProtectedPath, locationsWithin, PROTECTED_LOCATIONS } from "./tools/protected.ts"
export {
  type AgentDefinition,
  NamedSubagentParameters,
  SpawnParameters,
  spawn,
  subagent,
  SubagentParameters,
  subagentWith
} from "./tools/subagent.ts"
