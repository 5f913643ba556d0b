/**
 * A model must not reach code execution through the files the loop itself runs or trusts: hooks,
 * project settings, MCP config (and git's hooks and config). The file tools ask approval before
 * writing there, however the path is spelled, and refuse to reach them through a symbolic link.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { AgentLoop, builtinTools, Hook, isProtectedPath } from "effect-agent-loop"
import * as Testing from "effect-agent-loop/testing"
import { ofKind } from "../support/fixtures.ts"
import { builtinContext, provided, tempDir, write } from "../support/toolWorkspace.ts"

/**
 * Runs one turn whose model calls `calls` in one response, with the file tools on a fresh workspace
 * that lives until the caller's scope closes.
 */
const turnWith = (
  calls:
    | ReadonlyArray<{ readonly name: string; readonly arguments: Record<string, unknown> }>
    | ((root: string) => ReadonlyArray<{ readonly name: string; readonly arguments: Record<string, unknown> }>),
  options: { readonly setup?: (root: string) => void; readonly approver?: Hook.Hook } = {}
) =>
  Effect.gen(function*() {
    const root = yield* tempDir("ws-protected-")
    options.setup?.(root)
    const list = typeof calls === "function" ? calls(root) : calls
    const context = yield* builtinContext(root)
    const tools = provided(builtinTools({ enable: ["write_file", "edit_file"] }), context)
    const script = [{ toolCalls: list.map((c, i) => ({ id: `c${i}`, ...c })) }, { content: "done" }]
    return yield* Effect.gen(function*() {
      const events = (yield* Testing.recordEvents).all
      const loop = yield* AgentLoop
      if (options.approver) yield* loop.registerHook(options.approver, { name: "user" })
      yield* loop.turn("s", "go")
      const all = yield* events
      const skipped = new Map(ofKind(all, "ToolExecSkipped").map((e) => [e.toolCallId, e.reason]))
      const ended = new Map(ofKind(all, "ToolExecEnd").map((e) => [e.toolCallId, e]))
      return {
        root,
        outcome: list.map((_, i) => skipped.get(`c${i}`) ?? (ended.get(`c${i}`)!.isError ? `error: ${ended.get(`c${i}`)!.result}` : "ran"))
      }
    }).pipe(Effect.provide(Layer.fresh(Testing.layer({ tools, script }))))
  })

const writeTo = (path: string) => ({ name: "write_file", arguments: { path, content: "echo pwned\n" } })
const exists = (root: string, file: string) => nodeFs.existsSync(nodePath.join(root, file))
const DENIED = "Tool execution denied by approval: no approver registered"

describe("protected locations need approval", () => {
  it.effect("write_file into hooks, settings, MCP config and git, however spelled, is denied without an approver", () =>
    Effect.gen(function*() {
      const paths = [
        ".agents/hooks/x/HOOK.md",
        ".agents/hooks/x/scripts/run.sh",
        ".AGENTS/Hooks/x/HOOK.md",
        "src/../.agents/hooks/y/HOOK.md",
        "./.agents//hooks/z/HOOK.md",
        ".agents/hooks",
        ".agent-loop/settings.json",
        ".Agent-Loop/settings.json",
        ".mcp.json",
        "sub/../.MCP.json",
        ".vscode/mcp.json",
        ".Cursor/MCP.json",
        ".git/hooks/pre-commit",
        ".git/config"
      ]
      const { outcome, root } = yield* turnWith([...paths.map(writeTo), writeTo("src/ok.txt")], {
        setup: (root) => nodeFs.mkdirSync(nodePath.join(root, "src"))
      })
      expect(outcome).toEqual([...paths.map(() => DENIED), "ran"])
      for (const path of paths) expect(exists(root, path), path).toBe(false)
      expect(exists(root, "src/ok.txt")).toBe(true)
    }).pipe(Effect.scoped))

  it.effect("an absolute path into a protected location is denied too", () =>
    Effect.gen(function*() {
      const { outcome, root } = yield* turnWith((root) => [writeTo(nodePath.join(root, ".agents/hooks/a/HOOK.md"))])
      expect(outcome).toEqual([DENIED])
      expect(exists(root, ".agents/hooks/a/HOOK.md")).toBe(false)
    }).pipe(Effect.scoped))

  it.effect("edit_file on a hook is denied without an approver and runs with one", () =>
    Effect.gen(function*() {
      const setup = (root: string) => write(root, ".agents/hooks/ok/HOOK.md", "---\nname: ok\n---\n")
      const edit = { name: "edit_file", arguments: { path: ".agents/hooks/ok/HOOK.md", old_text: "ok", new_text: "evil" } }
      const denied = yield* turnWith([edit], { setup })
      expect(denied.outcome).toEqual([DENIED])
      expect(nodeFs.readFileSync(nodePath.join(denied.root, ".agents/hooks/ok/HOOK.md"), "utf8")).toContain("name: ok")
      const asked: Array<string> = []
      const approved = yield* turnWith([edit, writeTo(".mcp.json")], {
        setup,
        approver: { approveTool: ({ call }) => (asked.push(call.name), Hook.approve) }
      })
      expect(approved.outcome).toEqual(["ran", "ran"])
      expect(asked).toEqual(["edit_file", "write_file"])
      expect(nodeFs.readFileSync(nodePath.join(approved.root, ".agents/hooks/ok/HOOK.md"), "utf8")).toContain("name: evil")
    }).pipe(Effect.scoped))

  it.effect("a symbolic link into a protected location is refused even with approval for other paths", () =>
    Effect.gen(function*() {
      const { outcome, root } = yield* turnWith(
        [writeTo("alias/hooks/x/HOOK.md"), writeTo("hookdir/y/HOOK.md"), writeTo("cfg/settings.json")],
        {
          setup: (root) => {
            nodeFs.mkdirSync(nodePath.join(root, ".agents"))
            nodeFs.symlinkSync(nodePath.join(root, ".agents"), nodePath.join(root, "alias"))
            // the hooks directory itself is a link to another directory of the workspace
            nodeFs.mkdirSync(nodePath.join(root, "hookdir"))
            nodeFs.symlinkSync(nodePath.join(root, "hookdir"), nodePath.join(root, ".agents/hooks"))
            nodeFs.symlinkSync(nodePath.join(root, "cfg"), nodePath.join(root, ".agent-loop"))
            nodeFs.mkdirSync(nodePath.join(root, "cfg"))
          },
          approver: { approveTool: () => Hook.approve }
        }
      )
      for (const result of outcome) {
        expect(result).toMatch(/^error: .* is inside a protected location/)
        expect(result).toContain("write to it by its own path so the user is asked")
      }
      expect(exists(root, "hookdir/x")).toBe(false)
      expect(exists(root, "hookdir/y")).toBe(false)
      expect(exists(root, "cfg/settings.json")).toBe(false)
    }).pipe(Effect.scoped))

  it("isProtectedPath is lexical and conservative: any spelling, anywhere in the path", () => {
    for (const path of [".agents/hooks/a", "x/.agents/hooks", "/abs/.AGENTS/HOOKS/b", ".agent-loop", "a/.mcp.json", ".vscode/mcp.json", "x/.cursor/mcp.json", ".git/x", ".agents/./hooks"]) {
      expect(isProtectedPath(path), path).toBe(true)
    }
    for (const path of [".agents/skills/a.md", "hooks/a", "agent-loop/x", "mcp.json", ".mcp.json.bak", ".vscode/extensions.json", ".cursor/rules/a.md", "src/.gitignore", ".github/workflows/ci.yml"]) {
      expect(isProtectedPath(path), path).toBe(false)
    }
  })
})
