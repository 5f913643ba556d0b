/**
 * A custom command's prompt at invocation (`commandPrompt.ts`), on a stand-in `exec` that records
 * what it runs: a `` !`cmd` `` runs only when an allow rule (the command's `allowed-tools` or the
 * settings') or `--yes` approves it, a deny rule refuses it even so; `@path` inlines a workspace
 * file, leaves a name that is no file as text, refuses one outside or denied; nothing inlined is
 * read again.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Result, Schema } from "effect"
import { Tool, ToolRegistryLive } from "effect-agent-loop"
import * as CommandPrompt from "../../src/cli/commands/commandPrompt.ts"
import * as CustomCommands from "../../src/cli/config/customCommands.ts"
import * as Permissions from "../../src/cli/permissions/state.ts"
import { tempDir } from "../support/cliProcess.ts"
import { ruleList, type RuleLists } from "../support/rules.ts"

const command = (text: string) => {
  const parsed = CustomCommands.parse("/cmds/c.md", text)
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

const setup = () => {
  const workspace = tempDir()
  fs.writeFileSync(path.join(workspace, "notes.md"), "notes with !`echo hidden` and @notes.md\n")
  fs.writeFileSync(path.join(workspace, ".env"), "SECRET=1\n")
  const ran: Array<string> = []
  const exec = Tool.make({
    name: "exec",
    description: "stand-in",
    parameters: Schema.Struct({ command: Schema.String }),
    execute: ({ command }) => Effect.sync(() => {
      ran.push(command)
      return `exit code: 0\nout of ${command}\n`
    })
  })
  const make = (text: string, options: { readonly rules?: RuleLists; readonly approval?: "ask" | "approve" | "deny"; readonly args?: string } = {}) =>
    CommandPrompt.make(command(text), options.args ?? "", {
      workspace,
      permissions: Permissions.make(ruleList(options.rules ?? {}), workspace, undefined),
      approval: options.approval ?? "ask"
    }).pipe(Effect.provide(ToolRegistryLive.layer([exec])), Effect.result)
  return { make, ran, workspace }
}

describe("a command's prompt", () => {
  it.effect("runs a !`cmd` pre-approved by its allowed-tools, inlining its output; refuses one not approved, naming the rule", () =>
    Effect.gen(function*() {
      const { make, ran } = setup()
      const ok = yield* make("---\nallowed-tools: Bash(git status:*)\n---\nStatus: !`git status --short` for $1", { args: "me" })
      expect(ok).toEqual(Result.succeed("Status: out of git status --short for me"))
      const refused = yield* make("Now: !`uname -a`")
      expect(Result.isFailure(refused) && refused.failure).toBe("/c: !`uname -a` is not pre-approved: add Bash(uname -a:*) to allowed-tools in /cmds/c.md, or pass --yes")
      expect(ran).toEqual(["git status --short"])
      // the pre-approval held for that call only
      expect(yield* make("Again: !`git status --short`").pipe(Effect.map(Result.isFailure))).toBe(true)
    }))

  it.effect("--yes approves; a deny rule refuses even a pre-approved line", () =>
    Effect.gen(function*() {
      const { make, ran } = setup()
      expect(yield* make("!`date`", { approval: "approve" })).toEqual(Result.succeed("out of date"))
      const denied = yield* make("---\nallowed-tools: Bash(rm:*)\n---\n!`rm -rf x`", { rules: { deny: ["Bash(rm:*)"] }, approval: "approve" })
      expect(Result.isFailure(denied) && denied.failure).toBe("/c: !`rm -rf x` is denied by Bash(rm:*) (settings.json)")
      expect(ran).toEqual(["date"])
    }))

  it.effect("@file inlines a workspace file once (nothing inlined is read again); other names stay text; outside or denied is refused", () =>
    Effect.gen(function*() {
      const { make, ran } = setup()
      const ok = yield* make("Read @notes.md, ask @someone.")
      expect(ok).toEqual(Result.succeed("Read @notes.md,\n<file path=\"notes.md\">\nnotes with !`echo hidden` and @notes.md\n</file>\n ask @someone."))
      expect(ran).toEqual([])
      const outside = yield* make("@../etc/passwd")
      expect(Result.isFailure(outside) && outside.failure).toBe("/c: @../etc/passwd is outside the workspace")
      const denied = yield* make("@.env", { rules: { deny: ["Read(.env)"] } })
      expect(Result.isFailure(denied) && denied.failure).toBe("/c: @.env is denied by Read(.env)")
    }))
})
