/**
 * File rules cover every tool that touches the path, as Claude Code's do: `Read(...)` binds
 * `read_file`, `grep` and `list_dir`, `Edit(...)` and `Write(...)` bind `write_file` and
 * `edit_file`. A deny on `.env` keeps grep from searching or reporting it when it walks a directory
 * holding it; a symbolic link `notes.txt -> .env` does not get past `Read(.env)` (the rules are
 * matched on the path as given and on the path it really reaches); an `@path` mention of a denied
 * image stops the command.
 */
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { editFile, grep, listDir, readFile, WorkspaceLive, writeFile } from "effect-agent-loop"
import { evaluate, type RuleKind } from "../../src/cli/permissions/rules.ts"
import * as Permissions from "../../src/cli/permissions/state.ts"
import { cliSetup, runCli } from "../support/cliProcess.ts"
import { failure, tempDir, text, write } from "../support/toolWorkspace.ts"
import { ruleList } from "../support/rules.ts"

const rules = ruleList

const verdict = (lists: Partial<Record<RuleKind, ReadonlyArray<string>>>, name: string, path: string) => {
  const found = evaluate(rules(lists), { name, arguments: { path } }, "/ws")
  return found._tag === "Deny" || found._tag === "Ask" ? `${found._tag}:${found.rule.text}` : found._tag
}

/**
 * A workspace holding `.env`, `sub/.env`, `notes.txt`, `link.txt -> .env`, `secrets/key.pem`,
 * `private/plan.md`, with the CLI's rules `lists` as its path rules.
 */
const withRules = <A, E>(
  lists: Partial<Record<RuleKind, ReadonlyArray<string>>>,
  body: (root: string) => Effect.Effect<A, E, any>
) =>
  Effect.scoped(Effect.gen(function*() {
    const root = yield* tempDir("ws-rules-")
    write(root, ".env", "TOKEN=hunter2\n")
    write(root, "sub/.env", "TOKEN=sub-secret\n")
    write(root, "notes.txt", "the TOKEN lives in .env\n")
    write(root, "secrets/key.pem", "TOKEN key\n")
    write(root, "private/plan.md", "TOKEN plan\n")
    nodeFs.symlinkSync(".env", nodePath.join(root, "link.txt"))
    const permissions = Permissions.make(rules(lists), root, undefined)
    return yield* body(root).pipe(Effect.provide(WorkspaceLive.layer(root, { pathRule: permissions.pathRule })))
  })).pipe(Effect.provide(NodeServices.layer))

describe("Read and Edit rules cover every file tool", () => {
  it("Read names read_file, grep and list_dir; Edit and Write name write_file and edit_file; agent-loop's own names one tool", () => {
    for (const tool of ["read_file", "grep", "list_dir"]) expect([tool, verdict({ deny: ["Read(.env)"] }, tool, "sub/.env")]).toEqual([tool, "Deny:Read(.env)"])
    for (const tool of ["write_file", "edit_file"]) {
      expect([tool, verdict({ deny: ["Edit(.env)"] }, tool, ".env")]).toEqual([tool, "Deny:Edit(.env)"])
      expect([tool, verdict({ ask: ["Write(docs/**)"] }, tool, "docs/a.md")]).toEqual([tool, "Ask:Write(docs/**)"])
    }
    expect(verdict({ deny: ["Read(.env)"] }, "write_file", ".env")).toBe("None")
    expect(verdict({ deny: ["Edit(.env)"] }, "read_file", ".env")).toBe("None")
    expect(verdict({ deny: ["read_file(.env)"] }, "grep", ".env")).toBe("None")
    expect(verdict({ deny: ["Grep(.env)"] }, "read_file", ".env")).toBe("None")
  })

  it.effect("grep neither searches nor reports a denied file met in a walk, and refuses one named directly", () =>
    withRules({ deny: ["Read(.env)", "Read(secrets/)"] }, () =>
      Effect.gen(function*() {
        const found = yield* text(grep, { pattern: "TOKEN" })
        expect(found).toBe("notes.txt:1: the TOKEN lives in .env\nprivate/plan.md:1: TOKEN plan")
        expect(yield* text(grep, { pattern: "TOKEN", path: "sub" })).toBe("No matches for /TOKEN/ in \"sub\"")
        expect(yield* failure(grep, { pattern: "TOKEN", path: ".env" })).toContain("Read(.env)")
        expect(yield* failure(grep, { pattern: "TOKEN", path: "secrets" })).toContain("Read(secrets/)")
        // through a link to it: the path it reaches is matched too
        expect(yield* failure(grep, { pattern: "TOKEN", path: "link.txt" })).toContain("Read(.env)")
      })))

  it.effect("read_file refuses a link to a denied file; write_file and edit_file refuse one to a file an Edit rule denies", () =>
    withRules({ deny: ["Read(.env)", "Edit(.env)"] }, (root) =>
      Effect.gen(function*() {
        expect(yield* failure(readFile, { path: ".env" })).toContain("Read(.env)")
        const linked = yield* failure(readFile, { path: "link.txt" })
        expect(linked).toContain(".env")
        expect(linked).toContain("Read(.env)")
        expect(linked).not.toContain("hunter2")
        expect(yield* failure(writeFile, { path: "link.txt", content: "TOKEN=mine\n" })).toContain("Edit(.env)")
        expect(yield* failure(editFile, { path: "link.txt", old_text: "hunter2", new_text: "mine" })).toContain("Edit(.env)")
        expect(nodeFs.readFileSync(nodePath.join(root, ".env"), "utf8")).toBe("TOKEN=hunter2\n")
        expect(yield* text(readFile, { path: "notes.txt" })).toContain("the TOKEN lives")
      })))

  it.effect("list_dir shows a denied file's name, refuses a denied directory and does not enter it when recursing", () =>
    withRules({ deny: ["Read(.env)", "Read(secrets/)"] }, () =>
      Effect.gen(function*() {
        const listed = yield* text(listDir, { path: ".", recursive: true })
        expect(listed.split("\n")).toContain(".env")
        expect(listed).toContain("secrets/ [not listed: the permission rule Read(secrets/) denies it]")
        expect(listed).not.toContain("key.pem")
        expect(yield* failure(listDir, { path: "secrets" })).toContain("Read(secrets/)")
      })))

  it.effect("a walk passes by what an ask rule covers, saying so; under a path the user was asked about it searches", () =>
    withRules({ ask: ["Read(private/**)"] }, (root) =>
      Effect.gen(function*() {
        const found = yield* text(grep, { pattern: "TOKEN plan" })
        expect(found).toContain("No matches")
        expect(found).toContain("[1 file(s) or directories the permission rules ask about were not searched; grep them by their own path to be asked]")
        // the approver asked about "private" under Read(private/**) before this call ran
        expect(yield* text(grep, { pattern: "TOKEN plan", path: "private" })).toBe("private/plan.md:1: TOKEN plan")
        // a link leads there without the question: refused, naming the path to ask about
        nodeFs.symlinkSync("private/plan.md", nodePath.join(root, "plan.md"))
        const linked = yield* failure(readFile, { path: "plan.md" })
        expect(linked).toContain("private/plan.md")
        expect(linked).toContain("Read(private/**)")
      })))
})

describe("the CLI applies Read rules to grep, to links and to @mentions", () => {
  it("a deny rule on .env keeps it out of grep and read_file through a link", async (context) => {
    const { env, flags, server, workspace } = await cliSetup(context, [
      {
        toolCalls: [
          { id: "g", name: "grep", arguments: { pattern: "TOKEN" } },
          { id: "r", name: "read_file", arguments: { path: "notes.txt" } }
        ]
      },
      { text: "done" }
    ])
    nodeFs.writeFileSync(nodePath.join(workspace, ".env"), "TOKEN=hunter2\n")
    nodeFs.writeFileSync(nodePath.join(workspace, "readme.md"), "set TOKEN first\n")
    nodeFs.symlinkSync(".env", nodePath.join(workspace, "notes.txt"))
    const result = await runCli(["run", ...flags, "--ephemeral", "--tools", "grep,read_file", "--deny", "Read(.env)", "go"], { env })
    expect(result.code, result.stderr).toBe(0)
    const results = server.requests[1]!.body.messages.filter((m: any) => m.role === "tool").map((m: any) => String(m.content))
    expect(results[0]).toBe("readme.md:1: set TOKEN first")
    expect(results[1]).toContain("Read(.env)")
    expect(JSON.stringify(server.requests)).not.toContain("hunter2")
  })

  it("an @mention of an image a Read rule denies stops the command before anything is sent", async (context) => {
    const { env, flags, server, workspace } = await cliSetup(context, [{ text: "seen" }], { model: "gpt-4o" })
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from("pixels")])
    nodeFs.writeFileSync(nodePath.join(workspace, "secret.png"), png)
    nodeFs.symlinkSync("secret.png", nodePath.join(workspace, "shot.png"))
    for (const mention of ["@secret.png", "@shot.png"]) {
      const result = await runCli(["run", ...flags, "--ephemeral", "--tools", "", "--deny", "Read(secret.png)", `look at ${mention}`], { env })
      expect(result.code, result.stderr).toBe(1)
      expect(result.stderr).toContain("Read(secret.png)")
    }
    expect(server.requests).toHaveLength(0)
  })
})
