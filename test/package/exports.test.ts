/**
 * The public API, name by name: what `effect-agent-loop` and `effect-agent-loop/testing` export,
 * each namespace's members, and the names exported only as types. The lists are the decision: a
 * name added to or taken from the API (or leaking into it through a namespace's module) fails here
 * until the list says so. Values are read from what Node loads; type-only names from the sources,
 * which list their exports by name (`support/exportedNames.ts`, checked here against the values).
 */
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Api from "effect-agent-loop"
import * as Client from "effect-agent-loop/client"
import * as Testing from "effect-agent-loop/testing"
import { root } from "../support/cliProcess.ts"
import { exportedNames } from "../support/exportedNames.ts"

interface Names {
  readonly values: ReadonlyArray<string>
  readonly types: ReadonlyArray<string>
}

const TOP: ReadonlyArray<string> = [
  "AgentEvent", "AgentLoop", "AgentLoopCluster", "AgentLoopConfig", "AgentLoopLive", "AgentLoopProgram",
  "AiToolkit", "Anthropic", "Azure", "Bedrock", "BuiltinToolName", "Checkpoint", "CheckpointStale",
  "CommitTicket", "CompactionFailed", "ConcurrencyTimeout", "ContentRejected", "ContextLengthExceeded",
  "CurrentTurn", "DepthLimitExceeded", "EXIT_PLAN_MODE", "EditFileParameters", "EventBus", "EventBusLive", "EventJournal",
  "EventJournalLive", "ExecParameters", "ExitPlanModeParameters", "ExternalTerminal",
  "FileHistory", "FileHistoryDir", "FileHistoryError", "FileHooks", "Gemini", "GlobParameters",
  "GrepParameters", "Hook", "Hooks", "HooksLive", "Inspector", "InvalidConfig", "InvalidRewind", "InvalidSubTurnConfig",
  "LanguageModelProvider", "ListDirParameters", "LoopConfig", "LoopConfigLive", "MalformedResponse",
  "McpTools", "Message", "Metrics", "ModelOptions", "Models", "NamedSubagentParameters", "NoActiveTurn",
  "NodeSqliteClient", "NothingToUndo", "OpenAiCompatible", "OpenAiResponses", "OutputInvalid",
  "OutputUnavailable", "PROTECTED_LOCATIONS", "Presets", "Provider", "ProviderRejected", "ProviderTypes",
  "ProviderUnavailable", "RateLimited", "ReadFileParameters", "Replay", "ReplayMismatch", "ResponseTooLarge",
  "SANDBOX_DENIED_MARKER", "Sandbox", "SandboxAuto", "SandboxError", "SandboxLinux", "SandboxMacos",
  "SandboxNone", "Scripted", "Secrets", "SecretsLive", "Server", "SessionFenced", "SessionLog", "SessionStore",
  "SessionStoreError", "SessionStoreJsonl", "SessionStoreMemory", "SessionStoreSql", "SpawnParameters",
  "SteeringQueueFull", "SubTurn", "SubTurnBlocked", "SubTurnStopped", "SubagentParameters", "Tool",
  "ToolError", "ToolRegistry", "ToolRegistryLive", "Turn", "TurnAborted", "TurnBlocked", "TurnDefect",
  "TurnFailure", "Usage", "Vertex", "WebFetchParameters", "Workspace", "WorkspaceLive",
  "WriteFileParameters", "builtinTools", "editFile", "exec", "gitHooksDirectory", "glob", "grep",
  "isLifecycle", "isProtectedPath", "lifecycleKinds", "listDir", "locationsWithin", "makeEditFile",
  "makeExec", "makeExitPlanMode", "makeGlob", "makeGrep", "makeListDir", "makeReadFile", "makeWebFetch", "makeWriteFile",
  "readFile", "rewindSession", "spawn", "subagent", "subagentWith", "webFetch", "writeFile"
]

/** Each namespace's values (what Node loads) and its type-only names. */
const NAMESPACES: Readonly<Record<string, Names>> = {
  AgentEvent: {
    values: [
      "AgentEvent", "ContextCompress", "ErrorEvent", "FollowUpQueued", "InterruptReceived", "JournaledEvent", "LLMDelta",
      "LLMRequest", "LLMResponse", "LLMRetry", "Resumed", "SessionSummarize", "SteeringInjected",
      "SubTurnEnd", "SubTurnOrphan", "SubTurnResultDelivered", "SubTurnSpawn", "ToolExecEnd",
      "ToolExecSkipped", "ToolExecStart", "TurnEnd", "TurnStart", "flushKinds", "kinds", "make"
    ],
    types: ["EventBase", "EventKind", "EventOf", "EventPayload", "EventPlace"]
  },
  AgentLoopCluster: {
    values: [
      "AgentSession", "ClusterAuthError", "ClusterSecret", "ClusterUnavailable", "DEFAULT_RETENTION_WINDOW",
      "HookNotSupportedOnClient", "layerClient", "layerClientWith", "layerEntity", "layerRunner",
      "shardingDefaults"
    ],
    types: [
      "ClientOptions", "ClusterSecurity", "ClusterTls", "RetentionOptions", "RunnerOptions",
      "ShardingOptions"
    ]
  },
  AgentLoopConfig: {
    values: [
      "AgentLoopConfigSchema", "DurationSetting", "RetryPolicy", "SubTurnLimits", "make", "makeUnsafe"
    ],
    types: ["AgentLoopConfig", "AgentLoopConfigInput"]
  },
  AgentLoopLive: {
    values: ["layer"],
    types: ["LiveConfig"]
  },
  AgentLoopProgram: {
    values: ["layer", "make"],
    types: []
  },
  AiToolkit: {
    values: ["fromTools", "toTools"],
    types: ["LoopAiTool", "LoopToolkit", "ToolkitRequirements"]
  },
  Anthropic: {
    values: ["layer", "make"],
    types: ["Options"]
  },
  Azure: {
    values: ["layer", "make"],
    types: ["AzureApi", "Options"]
  },
  Bedrock: {
    values: ["layer", "make"],
    types: ["Credentials", "Options"]
  },
  Checkpoint: {
    values: [
      "Checkpoint", "CheckpointOutgrown", "INTERRUPTED_BY_CRASH", "PausedApproval", "PausedCall", "TurnCheckpoint"
    ],
    types: ["Checkpointing"]
  },
  EventBusLive: {
    values: ["layer", "layerCapacity", "make"],
    types: []
  },
  EventJournalLive: {
    values: ["RETAIN", "layer", "make"],
    types: ["Recording"]
  },
  FileHistoryDir: {
    values: ["layer", "make"],
    types: ["FileHistoryDirOptions"]
  },
  FileHooks: {
    values: ["discover", "layer", "resolveDirs"],
    types: ["DiscoverOptions", "Discovery", "FileHook", "HookProblem", "Trigger"]
  },
  Gemini: {
    values: ["layer", "make"],
    types: ["Options"]
  },
  Hook: {
    values: [
      "TEXT_LIMIT", "abortTurn", "approve", "block", "continue", "deny", "forTool", "hardAbort", "make",
      "modify", "patch"
    ],
    types: [
      "AbortTurn", "Approve", "Block", "ChangeOf", "Continue", "DecisionOf", "Deny", "HardAbort", "Hook",
      "HookContext", "HookResponse", "HookReturn", "HookSubTurn", "HookToolCall", "InputOf", "Modify",
      "Patch", "Point", "RegisterOptions", "RequestChanges", "ResponseChanges", "StopOf", "ToolHook",
      "TurnChanges", "TypedToolCall"
    ]
  },
  HooksLive: {
    values: ["layer", "make"],
    types: []
  },
  Inspector: {
    values: ["TOKEN_HEADER", "exportHtml", "layer", "makeToken", "url"],
    types: ["ClusterView", "ExportOptions", "Options"]
  },
  Server: {
    values: [
      "AgentLoopApi", "AlreadyDecided", "ApprovalNotFound", "Authorization", "Chat", "ChatRefused", "DEFAULT_MAX_BODY_BYTES",
      "SessionBusy", "SessionNotFound", "SteeringFull", "StoreFailed", "TurnNotFound", "TurnNotRunning", "layer", "makeToken"
    ],
    types: ["Approval", "FollowUpAnswer", "Options", "SteerAnswer", "TurnState"]
  },
  LanguageModelProvider: {
    values: ["fromLanguageModel", "layer"],
    types: []
  },
  LoopConfigLive: {
    values: ["layer"],
    types: []
  },
  McpTools: {
    values: [
      "McpConfigFile", "McpError", "McpServerConfig", "McpServers", "OAuthEntry", "OAuthError", "OAuthStoreError",
      "findWorkspaceConfig", "inputVariable", "layer", "layerFromConfigFile", "layerFromSources", "loadConfig",
      "loadConfigWithOrigins", "login", "oauthFileStore", "oauthMemoryStore", "tools"
    ],
    types: [
      "LoginOptions", "McpServerConfigInput", "McpServerOrigin", "McpSources", "McpTool", "McpToolsOptions", "OAuthOptions", "OAuthStore"
    ]
  },
  Message: {
    values: [
      "AssistantMessage", "Content", "ContentPart", "ImageDataPart", "ImagePart", "ImageUrlPart", "Message",
      "ProviderBlock", "SystemMessage", "TextPart", "ToolCall", "ToolResultMessage", "UserMessage",
      "assistant", "hasImages", "image", "imageUrl", "isImage", "system", "text", "textOf", "toolResult",
      "user"
    ],
    types: []
  },
  Metrics: {
    values: [
      "Endpoint", "MetricsEndpointError", "costUsd", "eventsDropped", "genAiOperationDuration", "genAiTokenUsage", "iterations", "layer",
      "layerPrometheus", "modelCallDuration", "modelCallSeconds", "retries", "tokens", "toolCalls", "turnDuration", "turnSeconds", "turns",
      "turnsInFlight"
    ],
    types: ["EndpointOptions"]
  },
  ModelOptions: {
    values: ["ModelOptions", "Reasoning", "ReasoningEffort", "merge"],
    types: []
  },
  Models: {
    values: [
      "ModelInfo", "PRICES_AS_OF", "Vendor", "builtinModels", "forProvider", "lookup", "priceTable",
      "providers"
    ],
    types: []
  },
  NodeSqliteClient: {
    values: ["layer", "make"],
    types: ["Options"]
  },
  OpenAiCompatible: {
    values: ["layer", "make", "preset"],
    types: ["Options"]
  },
  OpenAiResponses: {
    values: ["layer", "make"],
    types: ["Options"]
  },
  Presets: {
    values: ["openRouterAttribution", "presetNames", "presets"],
    types: ["Preset", "PresetName"]
  },
  ProviderTypes: {
    values: [
      "Finish", "FinishReason", "OutputFormat", "ProviderBlock", "ProviderChunk", "ProviderRequest",
      "ReasoningDelta", "TextDelta", "ToolCallDelta", "ToolDefinition"
    ],
    types: []
  },
  Replay: {
    values: [
      "CassetteEntry", "RecordedRequest", "fromEntries", "readCassette", "record", "replay"
    ],
    types: []
  },
  SandboxAuto: {
    values: ["layer", "make"],
    types: ["AutoOptions"]
  },
  SandboxLinux: {
    values: ["layer", "make"],
    types: ["LinuxOptions"]
  },
  SandboxMacos: {
    values: ["layer", "make"],
    types: ["MacosOptions"]
  },
  SandboxNone: {
    values: ["layer", "make"],
    types: []
  },
  Scripted: {
    values: ["ScriptedLog", "layer", "make"],
    types: ["Script", "ScriptedResponse", "ScriptedToolCall"]
  },
  SecretsLive: {
    values: ["layer"],
    types: []
  },
  SessionLog: {
    values: [
      "Compaction", "INTERRUPTED_RESULT", "Meta", "Rewind", "SUMMARY_PREFIX", "SessionEntry", "TurnOutcome",
      "describe", "foldEntry", "isCompaction", "isMessage", "isOutcome", "outcomes", "rebase", "repair",
      "rewindTo", "view"
    ],
    types: []
  },
  SessionStoreJsonl: {
    values: ["layer", "make"],
    types: ["Options"]
  },
  SessionStoreMemory: {
    values: ["JOURNAL_CAPACITY", "layer", "make"],
    types: []
  },
  SessionStoreSql: {
    values: ["layer", "layerSqlite", "make"],
    types: ["Options"]
  },
  SubTurn: {
    values: ["SubTurnConfig"],
    types: ["SubTurnConfigInput"]
  },
  Tool: {
    values: ["make", "toOutput"],
    types: [
      "Any", "MakeOptions", "McpOrigin", "Requirements", "Tool", "ToolContext", "ToolOutput"
    ]
  },
  ToolRegistryLive: {
    values: ["layer", "make"],
    types: []
  },
  Turn: {
    values: [
      "CompactResult", "Inbound", "Outbound", "SteerAck", "TurnInfo", "TurnPhase", "TurnResult", "TurnStatus"
    ],
    types: []
  },
  Usage: {
    values: ["ModelPrice", "Usage", "add", "cost", "empty"],
    types: []
  },
  Vertex: {
    values: ["layer", "make"],
    types: ["AuthHeaders", "GoogleAuthClient", "Options", "Publisher"]
  },
  WorkspaceLive: {
    values: ["layer", "make"],
    types: ["WorkspaceOptions"]
  }
}

const TOP_TYPES: ReadonlyArray<string> = [
  "AgentDefinition", "AgentLoopShape", "BuiltinToolRequirements", "BuiltinToolsOptions", "ChatReply",
  "CommitTicketShape", "CommittedTurn", "CurrentTurnShape", "DropCounts", "EditFileOptions", "EventBusShape",
  "EventJournalShape", "EventJournalStore",
  "ExecOptions", "ExternalCommand", "ExternalExit", "ExternalTerminalShape", "FileBefore", "FileChange",
  "FileHistoryShape", "GlobOptions", "GrepOptions", "HookInfo", "HookOutcome", "HooksShape", "ListDirOptions",
  "Named", "OpenFileRequest", "OverflowStrategy", "PathRule", "PathRuleVerdict", "PausedTurnStore", "PlanDecision",
  "PlanRequest", "PlanReviewer",
  "ProviderError", "ProviderShape", "ReadFileOptions", "RunPoint", "SandboxErrorReason", "SandboxKind",
  "SandboxOutcome", "SandboxRequest", "SandboxReview", "SandboxShape", "SandboxStatus", "SandboxedCommand",
  "SecretsShape", "SessionFencing", "SessionInfo", "SessionStoreShape", "SubscribeOptions", "Subscription",
  "ToolRegistryShape", "TurnFileChanges", "TurnOptions", "TypedTurnResult", "UndoRefused", "UndoResult",
  "WebFetchOptions", "WholeReply", "WorkspaceFile", "WorkspaceFiles", "WorkspaceShape", "WriteFileOptions"
]

const TESTING: ReadonlyArray<string> = ["advance", "heldSessions", "kinds", "layer", "recordEvents", "requests", "settled"]
const TESTING_TYPES: ReadonlyArray<string> = ["EventRecorder", "TestLoopOptions"]

const sorted = (names: Iterable<string>): Array<string> => [...names].sort()
const index = exportedNames(path.join(root, "src", "index.ts"))
const testing = exportedNames(path.join(root, "src", "testing", "index.ts"))
const namespaces = sorted(index.namespaces.keys())

describe("the public API", () => {
  it("effect-agent-loop exports these names", () => {
    expect(Object.keys(Api).sort()).toEqual(TOP)
  })

  it("each namespace holds these values", () => {
    const values = Object.fromEntries(namespaces.map((name) => [name, Object.keys(Api[name as keyof typeof Api]).sort()]))
    expect(values).toEqual(Object.fromEntries(Object.entries(NAMESPACES).map(([name, names]) => [name, names.values])))
  })

  it("the types exported by name are these, at the top and in each namespace", () => {
    expect(sorted(index.types)).toEqual(TOP_TYPES)
    const types = Object.fromEntries(namespaces.map((name) => [name, sorted(exportedNames(index.namespaces.get(name)!).types)]))
    expect(types).toEqual(Object.fromEntries(Object.entries(NAMESPACES).map(([name, names]) => [name, names.types])))
  })

  it("effect-agent-loop/testing exports these names", () => {
    expect(Object.keys(Testing).sort()).toEqual(TESTING)
    expect(sorted(testing.types)).toEqual(TESTING_TYPES)
  })

  it("effect-agent-loop/client exports these names", () => {
    expect(Object.keys(Client)).toEqual(["AgentLoopClient"])
    expect(Object.keys(Client.AgentLoopClient).sort()).toEqual(["Disconnected", "connect", "make"])
    expect(sorted(exportedNames(path.join(root, "src", "client", "client.ts")).types)).toEqual(["Client", "EventFrame", "Options"])
  })

  it("the reading of the sources finds exactly the values Node loads", () => {
    expect(sorted(index.values)).toEqual(Object.keys(Api).sort())
    expect(sorted(testing.values)).toEqual(Object.keys(Testing).sort())
    for (const name of namespaces) {
      expect(sorted(exportedNames(index.namespaces.get(name)!).values), name).toEqual(Object.keys(Api[name as keyof typeof Api]).sort())
    }
  })

  it("the lists are sorted, so that a change to them reads as one line", () => {
    for (const list of [TOP, TOP_TYPES, TESTING, TESTING_TYPES, ...Object.values(NAMESPACES).flatMap((names) => [names.values, names.types])]) {
      expect(list).toEqual(sorted(list))
    }
  })
})
