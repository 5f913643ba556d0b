/**
 * What the Linux sandbox learns from the machine: where bubblewrap is and whether it can start
 * (probed once), how the workspace's git repository is laid out, what a path is — and, after a
 * command, whether its failure looks like the sandbox's doing.
 */
import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import * as ChildProcess from "effect/process/ChildProcess"
import * as ChildProcessSpawner from "effect/process/ChildProcessSpawner"
import type { SandboxStatus } from "../../services/Sandbox.ts"
import { type GitLayout, isWithin, type PathKind, type Policy } from "./policy.ts"
import { DENIED_TEXT } from "./proxy.ts"

/** How to run without the sandbox, for every message that names a fix. */
export const OFF_FIX = "or run without it: --sandbox off (settings: sandbox.enabled: false)"

/** What a path is now (links followed, as bubblewrap follows them). */
export const kindOf = (path: string): PathKind => {
  try {
    return nodeFs.statSync(path).isDirectory() ? "dir" : "file"
  } catch {
    return "missing"
  }
}

/** `bwrap` on `PATH`, absolute, if any. */
export const findOnPath = (name: string, path: string | undefined): string | undefined => {
  for (const dir of (path ?? "/usr/local/bin:/usr/bin:/bin").split(":")) {
    if (dir === "") continue
    const candidate = nodePath.join(dir, name)
    try {
      nodeFs.accessSync(candidate, nodeFs.constants.X_OK)
      return candidate
    } catch {
      // not here
    }
  }
  return undefined
}

const PROBE_DEADLINE = Duration.seconds(10)

/**
 * Whether bubblewrap at `bwrap` starts a sandbox here: it runs `true` in the namespaces every
 * command gets, so a kernel without unprivileged user namespaces (or a container that forbids
 * them) is found before the first command, not by it.
 */
export const probe = (bwrap: string | undefined): Effect.Effect<SandboxStatus, never, ChildProcessSpawner.ChildProcessSpawner> =>
  Effect.gen(function*(): Effect.fn.Return<SandboxStatus, never, ChildProcessSpawner.ChildProcessSpawner> {
    if (bwrap === undefined || kindOf(bwrap) !== "file") {
      return {
        kind: "linux",
        available: false,
        reason: bwrap === undefined ? "bubblewrap (bwrap) is not installed" : `bubblewrap is not at ${bwrap}`,
        fix: `install it (apt install bubblewrap, dnf install bubblewrap), ${OFF_FIX}`
      } satisfies SandboxStatus
    }
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    const run = Effect.scoped(Effect.gen(function*() {
      // --new-session as for every command: nothing of bubblewrap stays in the process group it leaves
      const handle = yield* spawner.spawn(ChildProcess.make(bwrap, [
        "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--die-with-parent", "--cap-drop", "ALL",
        "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/run", "--new-session", "--disable-userns", "--", "true"
      ], { stdin: "ignore", stdout: "ignore", detached: true }))
      const stderr = yield* handle.stderr.pipe(Stream.decodeText(), Stream.mkString, Effect.forkScoped)
      const code = yield* handle.exitCode
      return { code: Number(code), stderr: yield* Fiber.join(stderr).pipe(Effect.orElseSucceed(() => "")) }
    }))
    const result = yield* run.pipe(
      Effect.timeoutOption(PROBE_DEADLINE),
      Effect.map((o) => o._tag === "Some" ? o.value : { code: -1, stderr: "bwrap did not answer within 10 seconds" }),
      Effect.orElseSucceed(() => ({ code: -1, stderr: `bwrap at ${bwrap} cannot be run` }))
    )
    if (result.code === 0) return { kind: "linux", available: true, detail: `bubblewrap at ${bwrap}` } satisfies SandboxStatus
    const line = result.stderr.split("\n").find((l) => l.trim() !== "")?.trim() ?? `bwrap exited with ${result.code}`
    const namespaces = /namespace|uid map|setting up uid|Operation not permitted|Permission denied/i.test(line)
    return {
      kind: "linux",
      available: false,
      reason: namespaces ? `bubblewrap cannot create its namespaces here (${line})` : `bubblewrap does not start (${line})`,
      fix: namespaces
        ? `allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0), ${OFF_FIX}`
        : `reinstall bubblewrap (apt install bubblewrap), ${OFF_FIX}`,
      detail: `bubblewrap at ${bwrap}`
    } satisfies SandboxStatus
  }).pipe(Effect.withSpan("sandbox.probe"))

const GIT_DEADLINE = Duration.seconds(5)

/**
 * The git directories of the repository at `root` (`git rev-parse`); empty outside a repository,
 * without git, or when git does not answer in five seconds.
 */
export const gitLayout = (root: string): Effect.Effect<GitLayout, never, ChildProcessSpawner.ChildProcessSpawner> =>
  Effect.gen(function*() {
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    const lines = yield* spawner.lines(ChildProcess.make("git", [
      "rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir", "--git-path", "hooks"
    ], { cwd: root, stdin: "ignore" }))
    const [dir, commonDir, hooks] = lines.map((l: string) => l.trim()).filter((l) => l !== "")
    if (dir === undefined || commonDir === undefined || hooks === undefined) return {}
    return { dir, commonDir, hooks } satisfies GitLayout
  }).pipe(
    Effect.timeoutOption(GIT_DEADLINE),
    Effect.map((o) => o._tag === "Some" ? o.value : {}),
    Effect.orElseSucceed((): GitLayout => ({}))
  )

/** What decides whether a cached git layout still holds: the `.git` entry and the config git reads. */
export const gitKey = (root: string): string => {
  const stamp = (path: string) => {
    try {
      const s = nodeFs.statSync(path)
      return `${s.ino}:${s.mtimeMs}`
    } catch {
      return "-"
    }
  }
  return `${root}|${stamp(nodePath.join(root, ".git"))}|${stamp(nodePath.join(root, ".git", "config"))}`
}

const PROXY_REFUSED = new RegExp(`${DENIED_TEXT.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}|CONNECT tunnel failed, response 403|response 403|403 Forbidden`)
const NO_NETWORK =
  /Could not resolve host|Temporary failure in name resolution|Name or service not known|getaddrinfo (?:ENOTFOUND|EAI_AGAIN)|Network is unreachable|ENETUNREACH|Connection refused|ECONNREFUSED|Failed to connect to/
const READ_ONLY = /Read-only file system|EROFS/
const DENIED = /Permission denied|EACCES|Operation not permitted|EPERM/

/**
 * Why a failed command's output suggests the sandbox stopped it, if it does: a write to a
 * read-only place, a host the proxy refused, a network that is not there, a denied path outside
 * the writable ones. A guess from the output — the host offers, the user decides.
 */
export const denialOf = (policy: Policy, exitCode: number, output: string): string | undefined => {
  if (exitCode === 0) return undefined
  if (PROXY_REFUSED.test(output)) return "the sandbox's proxy refused a host that is not allowed"
  if (READ_ONLY.test(output)) return "a write to a read-only place (outside the workspace, or one of its protected locations)"
  if (NO_NETWORK.test(output)) {
    return policy.allowedHosts.length === 0
      ? "no network: the sandbox lets commands reach no host (none is allowed)"
      : "a connection failed: the sandbox lets commands reach only the allowed hosts, through its proxy"
  }
  for (const line of output.split("\n")) {
    if (!DENIED.test(line)) continue
    for (const [path] of line.matchAll(/\/[^\s:'"`)]+/g)) {
      const outside = !policy.writable.some((root) => isWithin(root, path))
      const held = [...policy.readOnly, ...policy.placeholders, ...policy.hidden.map((h) => h.path)].some((p) => isWithin(p, path))
      if (outside || held) return `access to ${path} was denied, which the sandbox keeps out of reach`
    }
  }
  return undefined
}
