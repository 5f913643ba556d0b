import { fileURLToPath } from "node:url"
import { configDefaults, defineConfig } from "vitest/config"

const source = (path: string) => fileURLToPath(new URL(path, import.meta.url))

// Node keeps the compiled code of every module it loads here, for the test workers and for every
// process the tests start (the CLI, MCP servers, cluster runners inherit the variable): a CLI
// start-up costs about 40% less CPU once the cache is warm. Correctness does not depend on it
// (entries are keyed by the file's content).
process.env["NODE_COMPILE_CACHE"] ??= source("./.tmp/node-compile-cache")

/** Files that replace a module (`vi.mock`): they get a fresh module registry of their own. */
const mocking = ["test/tools/confined-portable.test.ts"]

/**
 * The end-to-end files: each starts servers, browsers, terminals or whole installs as processes,
 * and spends most of its time waiting on them (the split and its measurements: docs/testing.md).
 * `npm test` runs them as a second step, after the unit project (with the mocking one).
 */
const e2e = [
  // the cluster: throwaway Postgres servers, runner processes started, killed and restarted
  "test/cluster/{api,auth,blip,cli,cli-edges,cli-lost,cluster,failover,load,once,resume,stall,truth}.test.ts",
  // the SQL session store on real Postgres servers, and processes racing on one database
  "test/sessions/{fencing,paused-store,postgres-harness,store-sql,store-sql-lost-connection,store-sql-processes}.test.ts",
  "test/cli/stores.test.ts",
  // the inspector, and useChat against agent-loop serve, in headless Chromium
  "test/inspector/browser.test.ts",
  "test/inspector/views.test.ts",
  "test/server/chat-browser.test.ts",
  // approvals across restarts of a real agent-loop serve (SIGTERM, SIGKILL) on SQLite
  "test/server/durable-approvals.test.ts",
  // the CLI on a real terminal, through tmux
  "test/cli/{chat,chat-editing,chat-expand,chat-sessions,chat-stop,claude-settings,slash,stream-json,terminal,terminal-hostile,terminal-markdown,web-fetch-hosts,workspace-sessions}.test.ts",
  // the chat's plan mode, status line, notifications, Tab completion and Ctrl-R, through tmux
  "test/cli/chat-modes.test.ts",
  // the chat's prompt syntax (@path, !cmd, # note), resume's replay, /jobs and /rewind, through tmux
  "test/cli/chat-prompt.test.ts",
  // protocols: MCP servers nobody in this project wrote, installed from npm
  "test/mcp/real-servers.test.ts",
  // an editor (the official ACP client) driving `agent-loop acp` processes, and the official A2A client
  // driving `agent-loop serve`, against a loopback model
  "test/protocols/{a2a,acp,mcp-serve}.test.ts",
  // packaging: npm pack, an offline install and tsc over every example; the examples and the docs
  // generator run as processes
  "test/package/{packaging,examples,docs}.test.ts"
]

export default defineConfig({
  // Tests import the package by its name, as its users do (tsconfig.json maps the same names for tsc).
  resolve: {
    alias: [
      { find: /^effect-agent-loop$/, replacement: source("./src/index.ts") },
      { find: /^effect-agent-loop\/testing$/, replacement: source("./src/testing/index.ts") },
      { find: /^effect-agent-loop\/client$/, replacement: source("./src/client/index.ts") }
    ]
  },
  test: {
    // One bound for every test and hook that does not name a longer one: a test that starts CLIs,
    // servers or runners takes seconds on an idle machine, but on one loaded to several times its
    // cores (a CI host, another suite beside this one) each process gets a slice of a core: at about
    // 8 times the cores, CLI tests of 5-10 s took 30-60 s (measured; docs/testing.md). The bound
    // is for a test that hangs, and only such a test waits for it; the waits inside a test poll
    // a condition with their own deadline (test/support/waitUntil.ts), never a fixed time.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // The CLI tests start real processes; on a 2-core machine more than a few at once only
    // compete for the CPU until their deadlines pass.
    maxConcurrency: 4,
    // Files in three workers, whatever the cores: vitest's default (cores - 1) is one worker on a
    // 2-core machine, and most test files spend their time waiting on the processes they start,
    // so one file at a time leaves the CPU idle (measured: 8 CLI test files, 216 s in one worker,
    // 155 s in three, the same CPU time).
    maxWorkers: 3,
    // Spies are put back after every test, even one that failed or timed out before its own
    // restore: with workers that run file after file, a spy left behind would reach later files.
    restoreMocks: true,
    // A worker runs file after file without starting afresh for each (importing Effect and the
    // sources once, not 158 times: measured 317 s → 255 s for the suite). Test files therefore
    // restore what they change in the process (environment variables, handlers); the one that
    // replaces a module runs in a fresh registry of its own.
    projects: [
      {
        extends: true,
        // the examples' own tests too (`examples/order-tool.test.ts`): they are run as users would run theirs
        test: {
          name: "unit",
          include: ["test/**/*.test.ts", "examples/**/*.test.ts"],
          isolate: false,
          exclude: [...configDefaults.exclude, ...mocking, ...e2e]
        }
      },
      { extends: true, test: { name: "mocking", include: mocking } },
      { extends: true, test: { name: "e2e", include: e2e, isolate: false } }
    ]
  }
})
