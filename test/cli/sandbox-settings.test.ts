/**
 * The sandbox's settings and policy inputs without a process: which keys are read from which
 * files, what weakens the sandbox, how the files merge under `--sandbox`, and how the permission
 * rules and settings become the paths and hosts the sandbox is given.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { type Rule } from "../../src/cli/permissions/rules.ts"
import * as SandboxPolicy from "../../src/cli/sandbox/sandboxPolicy.ts"
import * as SandboxSettings from "../../src/cli/config/sandboxSettings.ts"
import { tempDir } from "../support/cliProcess.ts"
import { type RuleLists, ruleList } from "../support/rules.ts"

const rules = (lists: RuleLists): ReadonlyArray<Rule> => ruleList(lists, "test")

const source = (sandbox: SandboxSettings.SandboxSettings, path = "f", additionalDirectories: ReadonlyArray<string> = []) => ({
  path,
  sandbox,
  additionalDirectories
})

describe("sandbox settings", () => {
  it("reads Claude Code's sandbox keys leniently: an unknown key or a bad value is a warning naming it", () => {
    const { source: read, warnings } = SandboxSettings.fromClaude("/w/.claude/settings.json", {
      model: "x",
      sandbox: { enabled: false, excludedCommands: ["docker"], network: { allowedDomains: ["a.com"], strict: true }, bwrapPath: "/x", autoAllowBashIfSandboxed: "yes" },
      permissions: { additionalDirectories: ["../shared"] }
    })
    expect(read.sandbox).toEqual({ enabled: false, excludedCommands: ["docker"], network: { allowedDomains: ["a.com"] } })
    expect(read.additionalDirectories).toEqual(["../shared"])
    expect(warnings).toEqual([
      "/w/.claude/settings.json: sandbox.network.strict: not a setting agent-loop knows; ignored",
      "/w/.claude/settings.json: sandbox.bwrapPath: not a setting agent-loop knows; ignored",
      expect.stringMatching(/^\/w\/\.claude\/settings\.json: sandbox\.autoAllowBashIfSandboxed: .*; skipped$/)
    ])
  })

  it("names every key that weakens the sandbox, and none that tightens it", () => {
    expect(SandboxSettings.weakening(source({
      enabled: false,
      autoAllowBashIfSandboxed: true,
      excludedCommands: ["docker"],
      allowUnsandboxedCommands: true,
      network: { allowedDomains: ["a.com"], allowLocalBinding: true },
      filesystem: { allowWrite: ["/x"], denyRead: ["/y"] },
      enableWeakerNestedSandbox: true
    }, "f", ["/z"]))).toEqual([
      "sandbox.enabled: false",
      "sandbox.autoAllowBashIfSandboxed",
      "sandbox.excludedCommands",
      "sandbox.allowUnsandboxedCommands",
      "sandbox.network.allowedDomains",
      "sandbox.network.allowLocalBinding",
      "sandbox.filesystem.allowWrite",
      "sandbox.enableWeakerNestedSandbox",
      "permissions.additionalDirectories"
    ])
    expect(SandboxSettings.weakening(source({
      enabled: true,
      failIfUnavailable: true,
      allowUnsandboxedCommands: false,
      filesystem: { denyRead: ["/y"], denyWrite: ["/w"] },
      mcpServers: true,
      hooks: true
    }))).toEqual([])
  })

  it("merges files in order, later scalars winning and lists adding up; --sandbox wins over every file", () => {
    const files = [
      source({ enabled: false, network: { allowedDomains: ["a.com"] } }, "user"),
      source({ enabled: true, network: { allowedDomains: ["b.com", "a.com"] }, allowUnsandboxedCommands: true }, "project", ["../lib"])
    ]
    const chosen = SandboxSettings.choose(files, undefined)
    expect(chosen).toMatchObject({ mode: "auto", modeFrom: "project", allowedDomains: ["a.com", "b.com"], allowUnsandboxed: true, allowWrite: ["../lib"] })
    expect(SandboxSettings.choose(files.slice(0, 1), undefined)).toMatchObject({ mode: "off", modeFrom: "user" })
    expect(SandboxSettings.choose([source({ failIfUnavailable: true })], undefined).mode).toBe("on")
    expect(SandboxSettings.choose(files.slice(0, 1), "on")).toMatchObject({ mode: "on", modeFrom: "--sandbox" })
    expect(SandboxSettings.choose([], undefined)).toMatchObject({ mode: "auto", modeFrom: "default", autoAllowExec: false, mcpServers: false, hooks: false })
  })

  it("warns about each key set that the loop does not act on", () => {
    expect(SandboxSettings.notHonoured(source({ network: { allowUnixSockets: ["/var/run/docker.sock"], httpProxyPort: 8080 }, ignoreViolations: {} }, "u"))).toEqual([
      "u: sandbox.network.allowUnixSockets is not honoured by agent-loop; ignored",
      "u: sandbox.network.httpProxyPort is not honoured by agent-loop; ignored",
      "u: sandbox.ignoreViolations is not honoured by agent-loop; ignored"
    ])
  })
})

describe("sandbox policy inputs", () => {
  it("reads path rules as the rules do: absolute, home, anchored in the workspace, or anywhere in it", () => {
    expect(SandboxPolicy.ruleGlob("//etc/shadow", "/w", "/h")).toEqual(["etc", "shadow"])
    expect(SandboxPolicy.ruleGlob("~/.ssh/**", "/w", "/h")).toEqual(["h", ".ssh", "**"])
    expect(SandboxPolicy.ruleGlob("./secrets/", "/w", "/h")).toEqual(["w", "secrets", "**"])
    expect(SandboxPolicy.ruleGlob("/config/prod.json", "/w", "/h")).toEqual(["w", "config", "prod.json"])
    expect(SandboxPolicy.ruleGlob(".env", "/w", "/h")).toEqual(["w", "**", ".env"])
  })

  it.effect("turns deny rules and settings into paths, looking patterns up now, and allow rules' domains into hosts", () =>
    Effect.gen(function*() {
      const home = tempDir("sandbox-policy-")
      const workspace = path.join(home, "ws")
      for (const file of ["ws/.env", "ws/app/.env", "ws/keys/a.pem", "ws/src/main.ts", "ws/secrets/x", "ws/private/y"]) {
        fs.mkdirSync(path.dirname(path.join(home, file)), { recursive: true })
        fs.writeFileSync(path.join(home, file), "x")
      }
      const inputs = yield* SandboxPolicy.compile({
        workspace,
        home,
        rules: rules({
          deny: ["Read(.env)", "Read(**/*.pem)", "Read(./secrets/**)", "glob(./private/**)", "Read(~/.aws/**)", "Edit(src/**)", "WebFetch(domain:evil.com)"],
          allow: ["WebFetch(domain:docs.example.com)", "WebFetch(domain:evil.com)", "WebFetch", "Read(src/**)", "WebFetch(domain:0x7f.1)"]
        }),
        sandbox: SandboxSettings.choose([source({
          network: { allowedDomains: ["*.npmjs.org"] },
          filesystem: { denyRead: ["~/notes"], allowWrite: ["../shared", "../*"], denyWrite: ["/etc/x"] }
        })], undefined)
      })
      expect([...inputs.denyRead].sort()).toEqual(
        [".env", "app/.env", "keys/a.pem", "secrets", "private"].map((p) => path.join(workspace, p)).concat([path.join(home, ".aws"), path.join(home, "notes")]).sort()
      )
      expect(inputs.denyWrite).toEqual([path.join(workspace, "src"), "/etc/x"])
      expect(inputs.allowWrite).toEqual([path.join(home, "shared")])
      expect(inputs.allowedHosts).toEqual(["docs.example.com", "127.0.0.1", "*.npmjs.org"])
      expect(inputs.notes).toEqual([expect.stringContaining("../* in allowWrite is a pattern")])
    }))
})
