/**
 * Hook scripts run with the environment `exec` gets (`scrubbedEnv`): no variable whose name or
 * value looks like a credential, URLs with a password or a token included, unless the hook names
 * the variable (`env` in its HOOK.md, `passEnv` for the hooks in Claude Code's shape).
 */
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { EventBusLive as EventBusLayer, Hooks, HooksLive as HooksLayer, LoopConfigLive } from "effect-agent-loop"
import type { HooksConfig } from "../../src/layers/claudeHooks/config.ts"
import * as ClaudeHooks from "../../src/layers/claudeHooks/layer.ts"
import { tempDir } from "../support/cliProcess.ts"
import { context, exec, tempDirs, toolHook, withFileHooks, writeHook } from "../support/fileHooks.ts"
import { points } from "../support/hooksRunner.ts"

/** Credentials by name, by a URL's password (with and without a user) and by a URL's token. */
const SECRETS = {
  GITHUB_TOKEN: "hook-env-github-0123456789",
  X_SECRET: "hook-env-x-0123456789",
  DB_PASSWORD: "hook-env-db-0123456789",
  AGENT_LOOP_CLUSTER_SECRET: "hook-env-cluster-0123456789",
  HOOK_ENV_CACHE: "redis://:hook-env-redis-pw@cache.internal:6379/0",
  HOOK_ENV_REPO: "https://hook-env-repo-token-0123@git.example.com/org/repo.git",
  HOOK_ENV_DB: "postgres://app:hook-env-pg-pw@db.internal/app"
}
const PLAIN = { HOOK_ENV_PLAIN: "visible-value", HOOK_ENV_SITE: "https://example.com/docs" }

/** Sets the variables for the duration of `effect`. */
const withEnv = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => Object.assign(process.env, SECRETS, PLAIN)),
    () => effect,
    () => Effect.sync(() => Object.keys({ ...SECRETS, ...PLAIN }).forEach((name) => delete process.env[name]))
  )

/** The `NAME=value` lines of an `env` dump, as a record. */
const parseEnv = (text: string): Record<string, string> =>
  Object.fromEntries(text.split("\n").filter((line) => line.includes("=")).map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]))

const expectScrubbed = (dump: Record<string, string>, passed: ReadonlyArray<string> = []) => {
  for (const [name, value] of Object.entries(SECRETS)) {
    if (passed.includes(name)) expect(dump[name], name).toBe(value)
    else expect(dump[name], name).toBeUndefined()
  }
  const text = JSON.stringify(dump)
  for (const name of Object.keys(SECRETS).filter((name) => !passed.includes(name))) expect(text).not.toContain(SECRETS[name as keyof typeof SECRETS])
  expect(dump).toMatchObject(PLAIN)
  expect(dump["PATH"]).toBeDefined()
}

describe("the environment of file hooks", () => {
  it.effect("holds no credential by name or value, URLs with a password or a token included", () =>
    Effect.gen(function*() {
      const dirs = yield* tempDirs
      const out = path.join(dirs.root, "env.txt")
      yield* writeHook(dirs.project, "dump", toolHook("dump", `cat > /dev/null\nenv > '${out}'`))
      yield* Effect.gen(function*() {
        yield* points(yield* Hooks).beforeTool({ context, call: exec({ cmd: "ls" }) })
      }).pipe(withFileHooks(dirs), withEnv)
      expectScrubbed(parseEnv(yield* Effect.promise(() => fsp.readFile(out, "utf8"))))
    }).pipe(Effect.scoped))

  it.effect("gives a hook the variables its HOOK.md names in env, and only that hook", () =>
    Effect.gen(function*() {
      const dirs = yield* tempDirs
      const named = path.join(dirs.root, "named.txt")
      const other = path.join(dirs.root, "other.txt")
      yield* writeHook(dirs.project, "named", toolHook("named", `cat > /dev/null\nenv > '${named}'`, { env: ["GITHUB_TOKEN", "HOOK_ENV_CACHE"] }))
      yield* writeHook(dirs.project, "other", toolHook("other", `cat > /dev/null\nenv > '${other}'`))
      yield* Effect.gen(function*() {
        yield* points(yield* Hooks).beforeTool({ context, call: exec({ cmd: "ls" }) })
      }).pipe(withFileHooks(dirs), withEnv)
      expectScrubbed(parseEnv(yield* Effect.promise(() => fsp.readFile(named, "utf8"))), ["GITHUB_TOKEN", "HOOK_ENV_CACHE"])
      expectScrubbed(parseEnv(yield* Effect.promise(() => fsp.readFile(other, "utf8"))))
    }).pipe(Effect.scoped))
})

/** Runs a `PreToolUse` command dumping its environment, with `passEnv`; gives the dump. */
const claudeDump = (passEnv?: ReadonlyArray<string>) => {
  const dir = fs.realpathSync(tempDir())
  const hooks: HooksConfig = { PreToolUse: [{ hooks: [{ type: "command", command: "env > \"$CLAUDE_PROJECT_DIR/env.txt\"" }] }] }
  return Effect.gen(function*() {
    yield* points(yield* Hooks).beforeTool({ context, call: exec({ command: "ls" }) })
    return parseEnv(fs.readFileSync(path.join(dir, "env.txt"), "utf8"))
  }).pipe(
    Effect.provide(
      ClaudeHooks.layer({ sources: [{ source: "settings.json", hooks }], projectDir: dir, ...(passEnv === undefined ? {} : { passEnv }) }).pipe(
        Layer.provideMerge(HooksLayer.layer),
        Layer.provideMerge(EventBusLayer.layer),
        Layer.provideMerge(LoopConfigLive.layer({ model: "m" })),
        Layer.provideMerge(NodeServices.layer)
      )
    ),
    withEnv
  )
}

describe("the environment of hooks in Claude Code's shape", () => {
  it.effect("holds no credential by name or value", () =>
    Effect.gen(function*() {
      expectScrubbed(yield* claudeDump())
    }))

  it.effect("holds the variables passEnv names (the CLI's hookEnv setting)", () =>
    Effect.gen(function*() {
      const dump = yield* claudeDump(["DB_PASSWORD", "HOOK_ENV_REPO"])
      expectScrubbed(dump, ["DB_PASSWORD", "HOOK_ENV_REPO"])
      expect(dump["CLAUDE_PROJECT_DIR"]).toBeDefined()
    }))
})
