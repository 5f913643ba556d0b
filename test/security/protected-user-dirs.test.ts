/**
 * Run from `~`, the workspace holds the user's own configuration: the CLI's settings and trusted
 * workspaces, its data, the user's file hooks. And a repository whose `core.hooksPath` points at
 * a directory outside `.git` (husky's `.husky`, a `.githooks`, any name) runs whatever is there on
 * the user's next `git commit`. A model must not rewrite any of these without the user's approval.
 */
import { describe, expect, it } from "@effect/vitest"
import { NodeServices } from "@effect/platform-node"
import { Effect, Option } from "effect"
import * as childProcess from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { gitHooksDirectory, isProtectedPath, locationsWithin } from "effect-agent-loop"
import { isolatedEnv, runCli, tempDir } from "../support/cliProcess.ts"
import { start } from "../support/openaiServer.ts"

const git = (cwd: string, ...args: Array<string>) => childProcess.execFileSync("git", args, { cwd, stdio: "ignore" })

describe("the user's own directories and git's hooks inside the workspace need approval", () => {
  it("write_file into the config, data and user hooks directories and core.hooksPath is denied; elsewhere it runs", async (context) => {
    const home = fs.realpathSync(tempDir("home-as-workspace-"))
    git(home, "init", "-q")
    git(home, "config", "core.hooksPath", "ci/git-hooks")
    const targets = [
      "config/agent-loop/settings.json",
      "config/agent-loop/trusted-workspaces.json",
      "data/last-session",
      "config/agents/hooks/evil/HOOK.md",
      "ci/git-hooks/pre-commit",
      ".husky/pre-commit",
      ".githooks/pre-push"
    ]
    // a link to the config directory does not get around the question: the write is refused
    fs.mkdirSync(path.join(home, "config", "agent-loop"), { recursive: true })
    fs.writeFileSync(path.join(home, "config", "agent-loop", "AGENTS.md"), "be careful\n")
    fs.symlinkSync(path.join(home, "config", "agent-loop"), path.join(home, "cfg"))
    const server = await start([
      {
        toolCalls: [
          ...[...targets, "cfg/settings.json", "notes.txt"].map((file) => ({ name: "write_file", arguments: { path: file, content: "touch PWNED\n" } })),
          { name: "edit_file", arguments: { path: "config/agent-loop/AGENTS.md", old_text: "careful", new_text: "reckless" } }
        ]
      },
      { text: "done" }
    ])
    context.onTestFinished(() => server.close())
    const result = await runCli([
      "run", "--base-url", server.url, "--model", "m", "--workspace", home, "--ephemeral", "--no-context-files",
      "--tools", "write_file,edit_file", "--approval", "deny", "go"
    ], { env: isolatedEnv(home) })
    expect(result.code).toBe(0)
    const results = server.requests[1]!.body.messages.filter((m: any) => m.role === "tool").map((m: any) => String(m.content))
    expect(results.map((text: string) => text.includes("denied by approval"))).toEqual([...targets.map(() => true), false, false, true])
    expect(fs.readFileSync(path.join(home, "config", "agent-loop", "AGENTS.md"), "utf8")).toBe("be careful\n")
    expect(results.at(-3)).toContain(`Path "cfg/settings.json" is inside a protected location (config/agent-loop) by way of a symbolic link`)
    for (const file of targets) expect(fs.existsSync(path.join(home, file)), file).toBe(false)
    expect(fs.readFileSync(path.join(home, "notes.txt"), "utf8")).toBe("touch PWNED\n")
  })

  it.effect("locationsWithin keeps the directories inside the workspace, relative to it; git names its hooks directory", () =>
    Effect.gen(function*() {
      const home = fs.realpathSync(tempDir("home-locations-"))
      fs.mkdirSync(path.join(home, "config"))
      fs.symlinkSync(path.join(home, "config"), path.join(home, "cfg-link"))
      const outside = tempDir("elsewhere-")
      const found = yield* locationsWithin(home, [path.join(home, "cfg-link"), path.join(home, "data", "agent-loop"), outside])
      expect([...found].sort()).toEqual(["cfg-link", "config", "data/agent-loop"])
      expect(isProtectedPath("config/settings.json", found)).toBe(true)
      expect(isProtectedPath("./data/agent-loop/../agent-loop/x", found)).toBe(true)
      expect(isProtectedPath("src/config.ts", found)).toBe(false)
      // the usual names of a hooks directory are protected in every workspace
      for (const path of [".husky/pre-commit", "web/.Husky/_/h", ".githooks/pre-push"]) expect(isProtectedPath(path), path).toBe(true)
      // the whole workspace is the user's directory: every write asks
      expect(isProtectedPath("anything.txt", yield* locationsWithin(home, [home]))).toBe(true)
      expect(yield* gitHooksDirectory(home)).toEqual(Option.none())
      git(home, "init", "-q")
      expect(yield* gitHooksDirectory(home)).toEqual(Option.some(path.join(home, ".git", "hooks")))
      git(home, "config", "core.hooksPath", "tools/hooks")
      fs.mkdirSync(path.join(home, "sub"))
      expect(yield* gitHooksDirectory(path.join(home, "sub"))).toEqual(Option.some(path.join(home, "tools", "hooks")))
    }).pipe(Effect.provide(NodeServices.layer)))
})
