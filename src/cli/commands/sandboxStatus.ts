/**
 * `agent-loop sandbox status`: whether the sandbox can run here and why not (bubblewrap found? user
 * namespaces allowed? macOS's `sandbox-exec`?), what a run in this workspace would get (on, off,
 * and from which setting), the policy it would apply (what commands may write, what they cannot
 * read, which hosts they reach), how approval treats sandboxed commands, and the fix when it
 * cannot run. Exits 1 when the sandbox is wanted and cannot run, so a script can check it.
 */
import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { findOnPath, gitLayout, kindOf } from "../../layers/sandbox/internal.ts"
import { compile, userDirsOf } from "../../layers/sandbox/policy.ts"
import { Sandbox } from "../../services/Sandbox.ts"
import { locationsWithin } from "../../tools/index.ts"
import * as FileHooks from "../../layers/FileHooks.ts"
import { dataDir } from "../config/dataDir.ts"
import { sandboxPlatform } from "../config/sandboxSettings.ts"
import { configDir } from "../config/settingsFile.ts"
import * as SandboxLayer from "../sandbox/sandboxLayer.ts"
import * as SandboxPolicy from "../sandbox/sandboxPolicy.ts"
import * as Settings from "../settings/settings.ts"
import { fail } from "../terminal/failure.ts"
import { clean } from "../terminal/safeText.ts"
import { Screen } from "../terminal/screen.ts"

/** A number in a `/proc/sys` file, if it is there. */
const sysctl = (path: string): number | undefined => {
  try {
    const value = Number(nodeFs.readFileSync(path, "utf8").trim())
    return Number.isFinite(value) ? value : undefined
  } catch {
    return undefined
  }
}

/** What the machine offers a sandbox, one line each: the facts the probe's verdict rests on. */
export const checks = (platform: NodeJS.Platform = process.platform): ReadonlyArray<string> => {
  if (platform === "darwin") {
    return [`sandbox-exec: ${kindOf("/usr/bin/sandbox-exec") === "file" ? "/usr/bin/sandbox-exec" : "not found (it comes with macOS)"}`]
  }
  if (platform !== "linux") return [`platform: ${platform}, where no sandbox runs (Linux with bubblewrap, or macOS)`]
  const bwrap = findOnPath("bwrap", process.env["PATH"])
  const lines = [`bubblewrap: ${bwrap ?? "not found on PATH (apt install bubblewrap, dnf install bubblewrap)"}`]
  const max = sysctl("/proc/sys/user/max_user_namespaces")
  const clone = sysctl("/proc/sys/kernel/unprivileged_userns_clone")
  const apparmor = sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
  const problems = [
    max === 0 && "user.max_user_namespaces is 0",
    clone === 0 && "kernel.unprivileged_userns_clone is 0",
    apparmor === 1 && "AppArmor restricts them (kernel.apparmor_restrict_unprivileged_userns is 1: bubblewrap needs an AppArmor profile that allows userns)"
  ].filter((p): p is string => typeof p === "string")
  lines.push(`user namespaces: ${problems.length === 0 ? "allowed" : problems.join("; ")}`)
  return lines
}

/** A path as shown: `./x` inside the workspace, `~/x` under the home directory. */
const shown = (path: string, workspace: string, home: string) => {
  const inside = nodePath.relative(workspace, path)
  if (inside === "") return clean(path)
  if (!inside.startsWith("..") && !nodePath.isAbsolute(inside)) return clean(`./${inside}`)
  return clean(path === home ? "~" : path.startsWith(`${home}/`) ? `~/${path.slice(home.length + 1)}` : path)
}

/** `agent-loop sandbox status`. */
export const status = (flags: Settings.SandboxFlags) =>
  Effect.gen(function*() {
    const screen = yield* Screen
    const resolved = yield* Settings.resolveSandbox(flags)
    const { sandbox, workspace } = resolved
    for (const notice of resolved.notices) yield* screen.line(`agent-loop: ${notice.level}: ${clean(notice.text)}`)
    const home = os.homedir()
    const platform = sandboxPlatform(process.platform)
    const inputs = yield* SandboxPolicy.compile({ workspace, rules: resolved.rules, sandbox })
    for (const note of inputs.notes) yield* screen.line(`agent-loop: warn: ${clean(note)}`)
    const protect = yield* locationsWithin(workspace, [configDir(), dataDir(), FileHooks.resolveDirs({ workDir: workspace }).userDir])
    // what this platform's sandbox says, whatever the mode: the mode is shown beside it
    const probed = yield* Effect.scoped(
      Effect.gen(function*() {
        const context = yield* Layer.build(SandboxLayer.layer({ sandbox: { ...sandbox, mode: "on" }, inputs, protect }))
        return yield* Context.get(context, Sandbox).status
      })
    )
    const from = sandbox.modeFrom === "default" ? "the default" : sandbox.modeFrom === "--sandbox" ? "--sandbox" : clean(sandbox.modeFrom)
    const mode = sandbox.mode === "off"
      ? "off: commands run unconfined, with all your privileges"
      : sandbox.mode === "on"
      ? "on: commands run in the sandbox, and fail where it cannot run"
      : "auto: commands run in the sandbox wherever it can run"
    const out = (line: string) => screen.text(`${line}\n`)
    yield* out(`mode: ${mode} (${from})`)
    yield* out(`sandbox: ${platform === undefined ? "none on this platform" : platform === "linux" ? "Linux, bubblewrap" : "macOS, sandbox-exec"}`)
    for (const line of checks()) yield* out(`  ${clean(line)}`)
    yield* out(`available: ${probed.available ? `yes${probed.detail === undefined ? "" : ` (${clean(probed.detail)})`}` : `no: ${clean(probed.reason ?? "unknown")}`}`)
    if (!probed.available && probed.fix !== undefined) yield* out(`fix: ${clean(probed.fix)}`)
    yield* out(`workspace: ${clean(workspace)} (${resolved.trusted ? "trusted" : "not trusted: its settings cannot change the sandbox"})`)
    if (platform === "linux") {
      const policy = compile({
        workspace: nodeFs.existsSync(workspace) ? nodeFs.realpathSync(workspace) : workspace,
        cwd: workspace,
        home,
        git: yield* gitLayout(workspace),
        allowWrite: inputs.allowWrite,
        denyWrite: inputs.denyWrite,
        denyRead: inputs.denyRead,
        userDirs: userDirsOf(process.env, home),
        protect,
        allowedHosts: inputs.allowedHosts,
        kindOf,
        hostEnv: {},
        isSecret: () => false
      })
      const list = (paths: ReadonlyArray<string>) => paths.length === 0 ? "none" : paths.map((p) => shown(p, policy.writable[0] ?? workspace, home)).join(", ")
      yield* out("policy:")
      yield* out(`  writable: ${list(policy.writable)}, and a private /tmp`)
      yield* out(`  read-only inside them: ${list([...policy.readOnly, ...policy.placeholders])}`)
      if (policy.absent.length > 0) {
        yield* out(`  protected, not there yet (read-only from the command after the one that makes it): ${list(policy.absent)}`)
      }
      yield* out(`  unreadable: ${list(policy.hidden.map((h) => h.path))}`)
      yield* out("  readable: everything else, read-only")
      yield* out(`  network: ${policy.allowedHosts.length === 0 ? "none (no host is allowed)" : `through the sandbox's proxy, to ${policy.allowedHosts.map(clean).join(", ")}`}`)
    }
    yield* out("approval:")
    yield* out(`  exec: ${sandbox.autoAllowExec ? "runs without asking while sandboxed (autoAllowBashIfSandboxed), unless a deny or ask rule matches" : "asks as the rules and --approval say"}`)
    yield* out(`  outside the sandbox: ${
      sandbox.allowUnsandboxed === false
        ? "never (allowUnsandboxedCommands: false)"
        : sandbox.allowUnsandboxed === true
        ? "a command the sandbox stopped may run outside: asked at a prompt, approved by --yes (allowUnsandboxedCommands: true)"
        : "a command the sandbox stopped may run outside only when you say yes at a prompt"
    }`)
    if (sandbox.excludedCommands.length > 0) yield* out(`  excluded commands (run outside once approved): ${sandbox.excludedCommands.map(clean).join(", ")}`)
    yield* out(`  MCP stdio servers: ${sandbox.mcpServers ? "in the sandbox (sandbox.mcpServers)" : "unconfined (sandbox.mcpServers: true puts them in it)"}`)
    yield* out(`  hook scripts: ${sandbox.hooks ? "in the sandbox (sandbox.hooks)" : "unconfined (sandbox.hooks: true puts them in it)"}`)
    if (sandbox.mode !== "off" && !probed.available && (sandbox.mode === "on" || platform !== undefined)) {
      return yield* fail("the sandbox cannot run here, so exec refuses every command: see the fix above")
    }
  })
