/**
 * Files that tools run on their own are protected like git's hooks: VS Code's settings and tasks
 * (a task with `runOn: folderOpen`, a terminal profile), direnv's `.envrc` (run on `cd`), npm's
 * `.npmrc` (scripts' shell, registry, `node-options`), JetBrains' `.idea/` and dev containers'
 * `.devcontainer/` (`postCreateCommand`). A model's write there asks first, and a link into one is
 * refused.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { AgentLoop, builtinTools, isProtectedPath, PROTECTED_LOCATIONS } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { ofKind } from "../support/fixtures.ts"
import { builtinContext, provided, tempDir } from "../support/toolWorkspace.ts"

const AUTO_RUN = [".vscode/settings.json", ".vscode/tasks.json", ".envrc", ".npmrc", ".idea", ".devcontainer"]

/** One turn writing `paths` with no approver; what became of each call. */
const writeAll = (paths: ReadonlyArray<string>, setup: (root: string) => void = () => {}) =>
  Effect.gen(function*() {
    const root = yield* tempDir("ws-auto-run-")
    setup(root)
    const tools = provided(builtinTools({ enable: ["write_file", "edit_file"] }), yield* builtinContext(root))
    const calls = paths.map((path, i) => ({ id: `c${i}`, name: "write_file", arguments: { path, content: "{}\n" } }))
    return yield* Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      yield* (yield* AgentLoop).turn("s", "go")
      const all = yield* events
      const skipped = new Map(ofKind(all, "ToolExecSkipped").map((e) => [e.toolCallId, e.reason]))
      const ended = new Map(ofKind(all, "ToolExecEnd").map((e) => [e.toolCallId, e]))
      const outcome = calls.map(({ id }) => skipped.get(id) ?? (ended.get(id)!.isError ? `error: ${ended.get(id)!.result}` : "ran"))
      return { root, outcome }
    }).pipe(Effect.provide(Layer.fresh(Testing.layer({ tools, script: [{ toolCalls: calls }, { content: "done" }] }))))
  })

describe("auto-run configuration is a protected location", () => {
  it("is in PROTECTED_LOCATIONS, the list a sandbox binds read-only, and matched however spelled", () => {
    for (const location of AUTO_RUN) expect(PROTECTED_LOCATIONS).toContain(location)
    const spelled = [
      ".vscode/settings.json", ".VSCode/Tasks.json", "pkg/.vscode/tasks.json", ".envrc", "sub/.envrc", ".npmrc", "packages/a/.NPMRC",
      ".idea/workspace.xml", ".idea/runConfigurations/x.xml", ".devcontainer/devcontainer.json", "./.devcontainer/../.devcontainer/Dockerfile"
    ]
    for (const path of spelled) expect(isProtectedPath(path), path).toBe(true)
    for (const path of [".vscode/extensions.json", "envrc", ".npmrc.example", "idea/x", "docs/devcontainer.md"]) {
      expect(isProtectedPath(path), path).toBe(false)
    }
  })

  it.effect("write_file there is denied without an approver; a link into one is refused", () =>
    Effect.gen(function*() {
      const paths = [".vscode/settings.json", ".vscode/tasks.json", ".envrc", ".npmrc", ".idea/workspace.xml", ".devcontainer/devcontainer.json"]
      const { outcome, root } = yield* writeAll([...paths, "editor/tasks.json", "src/ok.json"], (root) => {
        nodeFs.mkdirSync(nodePath.join(root, ".vscode"))
        nodeFs.symlinkSync(nodePath.join(root, ".vscode"), nodePath.join(root, "editor"))
      })
      expect(outcome.slice(0, paths.length)).toEqual(paths.map(() => "Tool execution denied by approval: no approver registered"))
      expect(outcome[paths.length]).toMatch(/^error: Path "editor\/tasks.json" is inside a protected location \(\.vscode\/tasks\.json\)/)
      expect(outcome.at(-1)).toBe("ran")
      for (const path of [...paths, ".vscode/tasks.json"]) expect(nodeFs.existsSync(nodePath.join(root, path)), path).toBe(false)
    }).pipe(Effect.scoped))
})
