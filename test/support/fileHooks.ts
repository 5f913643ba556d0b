/**
 * Hook files for the file hooks tests: a temporary user and project level, HOOK.md files with
 * their scripts, named pipes a script signals through, and the file hooks layer over them.
 */
import { execFileSync } from "node:child_process"
import * as fsp from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { NodeServices } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { type AgentEvent, EventBusLive as EventBusLayer, FileHooks, Hook, HooksLive as HooksLayer, LoopConfigLive } from "effect-agent-loop"
import { ofKind } from "./fixtures.ts"

/** The directories of a test: a user hooks dir and a work dir whose `.agents/hooks` is the project level. */
export interface Dirs {
  readonly root: string
  readonly user: string
  readonly work: string
  readonly project: string
}

/** A fresh temp tree: a user hooks dir and a work dir whose `.agents/hooks` is the project level. */
export const tempDirs = Effect.acquireRelease(
  Effect.promise(async (): Promise<Dirs> => {
    const root = await fsp.mkdtemp(path.join(os.tmpdir(), "file-hooks-"))
    const dirs = { root, user: path.join(root, "user"), work: path.join(root, "work"), project: path.join(root, "work", ".agents", "hooks") }
    await fsp.mkdir(dirs.user, { recursive: true })
    await fsp.mkdir(dirs.project, { recursive: true })
    return dirs
  }),
  (dirs) => Effect.promise(() => fsp.rm(dirs.root, { recursive: true, force: true }))
)

/** Front matter fields as YAML lines. */
export const yamlOf = (fields: Record<string, unknown>): string =>
  Object.entries(fields).map(([key, value]) => `${key}: ${JSON.stringify(value)}`).join("\n")

/** A hook to write: its front matter, and its entry script (made executable unless `mode` says otherwise). */
export interface HookSpec {
  readonly front: Record<string, unknown> | string
  readonly script?: string
  readonly entry?: string
  readonly mode?: number
}

/** Writes the hook `dir` under a level's directory; gives its HOOK.md. */
export const writeHook = (level: string, dir: string, spec: HookSpec) =>
  Effect.promise(async () => {
    const hookDir = path.join(level, dir)
    await fsp.mkdir(path.join(hookDir, "scripts"), { recursive: true })
    const front = typeof spec.front === "string" ? spec.front : yamlOf(spec.front)
    await fsp.writeFile(path.join(hookDir, "HOOK.md"), `---\n${front}\n---\n\n# ${dir}\n\nNot read at start-up.\n`)
    if (spec.script !== undefined) {
      const entry = path.join(hookDir, "scripts", spec.entry ?? "run")
      await fsp.writeFile(entry, `#!/bin/sh\n${spec.script}\n`)
      await fsp.chmod(entry, spec.mode ?? 0o755)
    }
    return path.join(hookDir, "HOOK.md")
  })

/** A pre-tool-call hook running `script`. */
export const toolHook = (name: string, script: string, extra: Record<string, unknown> = {}): HookSpec => ({
  front: { name, description: `${name} hook`, trigger: "pre-tool-call", ...extra },
  script
})

/** A named pipe: reading it waits (without polling) until a script has written to it. */
export const fifo = (dirs: Dirs, name: string) =>
  Effect.sync(() => {
    const file = path.join(dirs.root, name)
    execFileSync("mkfifo", [file])
    return file
  })
/** Waits for a script to write to the pipe, and gives what it wrote. */
export const readFifo = (file: string) => Effect.promise(() => fsp.readFile(file, "utf8"))

/** Provides the file hooks of `dirs` over the hooks runner, an event bus and a config. */
export const withFileHooks = (dirs: Dirs) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  self.pipe(Effect.provide(
    FileHooks.layer({ userDir: dirs.user, workDir: dirs.work }).pipe(
      Layer.provideMerge(HooksLayer.layer),
      Layer.provideMerge(EventBusLayer.layer),
      Layer.provideMerge(LoopConfigLive.layer({ model: "m" })),
      Layer.provideMerge(NodeServices.layer)
    )
  ))

/** A top-level turn's context. */
export const context: Hook.HookContext = { turnId: "t1", sessionKey: "s1", iteration: 1, depth: 0 }
/** A call of `exec` with these arguments. */
export const exec = (args: unknown): Hook.HookToolCall => ({ id: "call-1", name: "exec", arguments: args, readOnly: false, requiresApproval: false })

/** The `Error` events. */
export const errorsOf = (events: ReadonlyArray<AgentEvent.AgentEvent>) => ofKind(events, "Error")

/** The process is still running. */
export const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
