import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Schema } from "effect"
import { BuiltinToolName, builtinTools, Tool } from "effect-agent-loop"

describe("tool metadata", () => {
  const byName = Object.fromEntries(builtinTools().map((tool) => [tool.name, tool]))

  it("builds the file, shell and todo tools by default, in a fixed order, and a subset with enable", () => {
    expect(builtinTools().map((t) => t.name)).toEqual(["read_file", "list_dir", "grep", "glob", "write_file", "edit_file", "exec", "exec_output", "exec_kill", "todo_write"])
    expect(builtinTools({ enable: ["grep", "read_file"] }).map((t) => t.name)).toEqual(["read_file", "grep"])
    expect(builtinTools({ enable: [] })).toEqual([])
    expect(Schema.decodeUnknownExit(BuiltinToolName)("rm_rf")._tag).toBe("Failure")
  })

  it("marks read-only and approval-requiring tools", () => {
    const flags = Object.values(byName).map((t) => [t.name, t.readOnly, t.requiresApproval])
    expect(flags).toEqual([
      ["read_file", true, false],
      ["list_dir", true, false],
      ["grep", true, false],
      ["glob", true, false],
      ["write_file", false, false],
      ["edit_file", false, false],
      ["exec", false, true],
      // reading a job's output runs nothing; stopping one ends what was approved
      ["exec_output", true, false],
      ["exec_kill", false, false],
      // it changes nothing outside the conversation
      ["todo_write", true, false]
    ])
  })

  it("asks approval per call: always, never, or when the tool's rule holds for the decoded arguments", () => {
    const make = (requiresApproval?: boolean | ((args: { readonly n: number }) => boolean)) =>
      Tool.make({
        name: "t",
        description: "d",
        parameters: Schema.Struct({ n: Schema.Number }),
        ...(requiresApproval === undefined ? {} : { requiresApproval }),
        execute: () => Effect.succeed("")
      })
    expect([make().requiresApproval, make().needsApproval({ n: 1 })]).toEqual([false, false])
    expect([make(true).requiresApproval, make(true).needsApproval({ n: 1 })]).toEqual([true, true])
    const big = make(({ n }) => n > 10)
    expect([big.requiresApproval, big.needsApproval({ n: 1 }), big.needsApproval({ n: 11 })]).toEqual([false, false, true])
    expect(byName.write_file!.needsApproval({ path: ".agents/hooks/x/HOOK.md", content: "" })).toBe(true)
    expect(byName.write_file!.needsApproval({ path: "src/x.ts", content: "" })).toBe(false)
    expect(byName.edit_file!.needsApproval({ path: ".MCP.json", old_text: "a", new_text: "b" })).toBe(true)
    expect(byName.exec!.needsApproval({ command: "ls" })).toBe(true)
    expect(byName.read_file!.needsApproval({ path: ".git/config" })).toBe(false)
  })

  it("exposes JSON Schemas with required fields and a description on every property", () => {
    const required = Object.fromEntries(
      Object.values(byName).map((t) => [t.name, (t.definition.parameters.required as Array<string> | undefined) ?? []])
    )
    expect(required).toEqual({
      read_file: ["path"],
      list_dir: [],
      grep: ["pattern"],
      glob: ["pattern"],
      write_file: ["path", "content"],
      edit_file: ["path", "old_text", "new_text"],
      exec: ["command"],
      exec_output: ["id"],
      exec_kill: ["id"],
      todo_write: ["todos"]
    })
    for (const tool of Object.values(byName)) {
      expect(tool.definition.parameters.type).toBe("object")
      const properties = tool.definition.parameters.properties as Record<string, { description?: string }>
      for (const [name, property] of Object.entries(properties)) {
        expect(property.description, `${tool.name}.${name}`).toMatch(/\w{3,}/)
      }
      expect(tool.description.length).toBeGreaterThan(40)
    }
  })

  it.effect("rejects bad arguments at decode time", () =>
    Effect.gen(function*() {
      const result = yield* Effect.exit(byName.read_file!.decode({ path: "a", offset: 0 }))
      expect(Exit.isFailure(result)).toBe(true)
      expect(Exit.isFailure(yield* Effect.exit(byName.edit_file!.decode({ path: "a" })))).toBe(true)
    }))
})
