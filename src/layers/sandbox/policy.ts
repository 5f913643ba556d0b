/**
 * The sandbox's policy, in one place: what a confined command may read, write and reach, compiled
 * from plain inputs (`compile`), then turned into bubblewrap's arguments (`bwrapArgs`). Both are
 * pure — every fact about the file system comes in through `PolicyInput.kindOf` — so the whole
 * policy is tested without running anything.
 *
 * - Files: the rest of the system is read-only; the workspace, its git directories and the paths
 *   the user allowed are writable; inside them the protected locations (`PROTECTED_LOCATIONS`,
 *   git's hooks directory and config) are read-only; credentials and the loop's own directories are
 *   not readable at all. A protected location that does not exist yet is read-only from the command
 *   after the one that made it (the policy is compiled before every command), and the sandbox says
 *   when a command made one; only git's hooks directory is held before it exists, by an empty
 *   read-only placeholder (inside git's directory, where nobody sees it come and go).
 * - Host sockets are hidden: a private `/tmp` (the session's temporary directory), a tmpfs over
 *   `/run`, a fresh `/dev`.
 * - The network is a namespace of its own with nothing in it but loopback; when hosts are allowed,
 *   a bridge inside forwards `127.0.0.1:PROXY_PORT` to the loop's proxy (`proxy.ts`).
 * - Processes: a pid namespace of its own with its own `/proc`, no capabilities, no further user
 *   namespaces, killed with its parent, and a minimal environment.
 */
import * as nodePath from "node:path"
import { PROTECTED_LOCATIONS } from "../../tools/protected.ts"
import { isWithin } from "../../domain/paths.ts"

/** What a path is, as the policy needs to know it. */
export type PathKind = "dir" | "file" | "missing"

/** Where git keeps a repository's state, as `git rev-parse` says (absolute). */
export interface GitLayout {
  /** The git directory (`.git`, or `.git/worktrees/NAME` in a linked worktree). */
  readonly dir?: string
  /** The common directory of a linked worktree's repository (objects, refs, config). */
  readonly commonDir?: string
  /** The directory git runs hooks from (`core.hooksPath` counted). */
  readonly hooks?: string
}

/** The policy's inputs. */
export interface PolicyInput {
  /** The workspace root, canonical. */
  readonly workspace: string
  readonly cwd: string
  /** The user's home directory (whose credentials are hidden). */
  readonly home: string
  readonly git: GitLayout
  /** More writable paths (`sandbox.filesystem.allowWrite`, additional directories). */
  readonly allowWrite?: ReadonlyArray<string>
  /** Read-only paths inside writable ones. */
  readonly denyWrite?: ReadonlyArray<string>
  /** Unreadable paths, besides `hiddenHomePaths` and `userDirs` (Read deny rules). */
  readonly denyRead?: ReadonlyArray<string>
  /** The loop's own configuration and data directories: never readable. */
  readonly userDirs?: ReadonlyArray<string>
  /** More protected locations, relative to the workspace root. */
  readonly protect?: ReadonlyArray<string>
  /** Host patterns the proxy lets through; none means no network at all. */
  readonly allowedHosts?: ReadonlyArray<string>
  /** What each path is now. */
  readonly kindOf: (path: string) => PathKind
  /** This process's environment, from which the few harmless variables are taken. */
  readonly hostEnv: Readonly<Record<string, string | undefined>>
  /** The caller's own variables; those that look secret are dropped. */
  readonly env?: Readonly<Record<string, string | undefined>>
  readonly isSecret: (name: string, value: string) => boolean
  /** Names of `env` kept even when they look secret (`SandboxRequest.pass`). */
  readonly pass?: ReadonlyArray<string>
  /**
   * Programs the sandbox runs inside (the bridge's Node, a program named by its path) and the files
   * a command's own configuration names: kept visible, read-only, when they sit where the sandbox
   * lays its own directories (`/tmp`, `/run`).
   */
  readonly programs?: ReadonlyArray<string>
}

/** A compiled policy. */
export interface Policy {
  readonly cwd: string
  readonly home: string
  /** Writable trees, outermost first. */
  readonly writable: ReadonlyArray<string>
  /** Existing paths inside writable trees bound read-only. */
  readonly readOnly: ReadonlyArray<string>
  /** Git's missing hooks directory (its first missing component), held by an empty read-only directory. */
  readonly placeholders: ReadonlyArray<string>
  /**
   * Protected locations that do not exist: a command may create them (they are read-only from the
   * next command on, when the policy is compiled again); the sandbox says so after the command.
   */
  readonly absent: ReadonlyArray<string>
  /** Existing git directories inside the workspace, bound onto themselves so they cannot be renamed away. */
  readonly pinned: ReadonlyArray<string>
  /** Unreadable paths that exist, directories and files apart (they are covered differently). */
  readonly hidden: ReadonlyArray<{ readonly path: string; readonly kind: "dir" | "file" }>
  /**
   * Host paths under the sandbox's own `/tmp` and `/run` bound back, read-only: the directories of
   * the command's `PATH` and the programs the sandbox runs there (a Node or a project checked out
   * under `/tmp` would otherwise vanish inside).
   */
  readonly visible: ReadonlyArray<string>
  readonly allowedHosts: ReadonlyArray<string>
  /** The command's whole environment, proxy variables included. */
  readonly env: Readonly<Record<string, string>>
}

/** Under the user's home: credentials, browser profiles and keyrings no command needs to read. */
export const HIDDEN_HOME_PATHS: ReadonlyArray<string> = [
  ".ssh", ".aws", ".azure", ".gnupg", ".netrc", ".git-credentials", ".npmrc", ".pypirc", ".pgpass",
  ".config/gcloud", ".config/gh", ".config/op", ".kube", ".docker/config.json", ".cargo/credentials",
  ".cargo/credentials.toml", ".claude/.credentials.json", ".password-store", ".local/share/keyrings",
  ".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware", ".config/microsoft-edge",
  ".config/vivaldi", ".config/opera", "snap/firefox", "snap/chromium", ".var/app/org.mozilla.firefox"
]

/** The port of the proxy bridge on the sandbox's own loopback. */
export const PROXY_PORT = 3128

/** Where the proxy's socket appears inside the sandbox. */
export const PROXY_SOCKET_INSIDE = "/run/agent-loop/proxy.sock"

/** The variables passed from this process's environment (when they do not look secret). */
const PASSED_ENV = new Set(["PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "TZ", "SHELL", "COLORTERM", "NO_COLOR"])

/**
 * The loop's own directories for an environment, as the CLI names them: configuration
 * (`$XDG_CONFIG_HOME/agent-loop`) and data (`$AGENT_LOOP_DATA_DIR`, `$XDG_DATA_HOME/agent-loop`),
 * with their defaults under `home`.
 */
export const userDirsOf = (env: Readonly<Record<string, string | undefined>>, home: string): ReadonlyArray<string> => {
  const xdg = (name: string, fallback: string) => {
    const value = env[name]
    return value !== undefined && nodePath.isAbsolute(value) ? value : nodePath.join(home, fallback)
  }
  const own = env["AGENT_LOOP_DATA_DIR"]
  return [
    nodePath.join(xdg("XDG_CONFIG_HOME", ".config"), "agent-loop"),
    nodePath.join(xdg("XDG_DATA_HOME", nodePath.join(".local", "share")), "agent-loop"),
    nodePath.join(home, ".config", "agent-loop"),
    nodePath.join(home, ".local", "share", "agent-loop"),
    ...(own !== undefined && own !== "" ? [nodePath.resolve(own)] : [])
  ]
}

/** Whether `path` is `root` or inside it. */
export { isWithin }

const unique = (paths: ReadonlyArray<string>): ReadonlyArray<string> => [...new Set(paths.map((p) => nodePath.resolve(p)))]

/** `path`'s first component that does not exist (`path` itself when its parent exists). */
const firstMissing = (path: string, kindOf: (path: string) => PathKind): string | undefined => {
  let at = path
  let missing: string | undefined
  while (kindOf(at) === "missing") {
    missing = at
    const parent = nodePath.dirname(at)
    if (parent === at) return undefined
    at = parent
  }
  return kindOf(at) === "dir" ? missing : undefined
}

/** Compiles the inputs into a policy. */
export const compile = (input: PolicyInput): Policy => {
  const { git, kindOf, workspace } = input
  const gitDirs = unique([git.dir, git.commonDir].filter((d): d is string => d !== undefined && kindOf(d) === "dir"))
  const writable = unique([workspace, ...gitDirs, ...(input.allowWrite ?? [])].filter((p) => kindOf(p) !== "missing"))
    .filter((p, _, all) => !all.some((other) => other !== p && isWithin(other, p)))
    .sort((a, b) => a.length - b.length)
  const inWritable = (p: string) => writable.some((root) => isWithin(root, p))

  // the repository's `.git` entry is handled as git's directories are: written, but its hooks and config not
  const dotGit = nodePath.join(workspace, ".git")
  const locations = [...PROTECTED_LOCATIONS, ...(input.protect ?? [])]
    .map((l) => nodePath.resolve(workspace, l))
    .filter((p) => p !== dotGit)
  // git's config files, read-only when they exist; a missing one (`config.worktree`) is git's own to create
  const gitFiles = gitDirs.flatMap((d) => [nodePath.join(d, "config"), nodePath.join(d, "config.worktree")])
  const held = [...locations, ...(git.hooks === undefined ? [] : [git.hooks]), ...(input.denyWrite ?? [])]
  if (kindOf(dotGit) === "file") held.push(dotGit) // a linked worktree's pointer to its git directory

  const readOnly: Array<string> = []
  const placeholders: Array<string> = []
  const absent: Array<string> = []
  for (const path of unique([...held, ...gitFiles])) {
    if (!inWritable(path)) continue // read-only already
    if (kindOf(path) !== "missing") readOnly.push(path)
    else if (path === git.hooks) {
      // git's hooks directory is held even before it exists: it is inside git's directory (or
      // where core.hooksPath points), so an empty placeholder there is seen by no one
      const first = firstMissing(path, kindOf)
      if (first !== undefined) placeholders.push(first)
    } else if (!gitFiles.includes(path)) absent.push(path)
  }
  // a repository made by the command (`git init`) brings hooks nothing held: reported after
  if (kindOf(dotGit) === "missing") absent.push(dotGit)
  const pinned = gitDirs.filter((d) => isWithin(workspace, d) && d !== workspace)

  const hidden: Array<{ path: string; kind: "dir" | "file" }> = []
  const home = input.home
  for (const path of unique([...HIDDEN_HOME_PATHS.map((p) => nodePath.join(home, p)), ...(input.userDirs ?? []), ...(input.denyRead ?? [])])) {
    const kind = kindOf(path)
    if (kind !== "missing") hidden.push({ path, kind })
  }

  const allowedHosts = input.allowedHosts ?? []
  const env = environment(input, allowedHosts.length > 0)
  const visible = visibleAgain(input, env["PATH"] ?? "", writable, hidden.map((h) => h.path))
  return { cwd: input.cwd, home, writable, readOnly, placeholders, absent, pinned, hidden, visible, allowedHosts, env }
}

/**
 * A package's `node_modules/.bin` stands for the whole `node_modules`: its entries are links into
 * it (`node`, `npm`, test runners), which would lead nowhere with the directory alone.
 */
const packagesOf = (dir: string): string =>
  nodePath.basename(dir) === ".bin" && nodePath.basename(nodePath.dirname(dir)) === "node_modules" ? nodePath.dirname(dir) : dir

/** The directories the sandbox replaces with its own: what the host has there is out of sight. */
const REPLACED = ["/tmp", "/run", "/var/run"]

/**
 * The `PATH` directories and programs that sit under `REPLACED`, to bind back read-only; never one
 * inside a hidden or writable path (those are bound already, or must stay out of sight).
 */
const visibleAgain = (
  input: PolicyInput,
  path: string,
  writable: ReadonlyArray<string>,
  hidden: ReadonlyArray<string>
): ReadonlyArray<string> =>
  unique([...path.split(":").map(packagesOf), ...(input.programs ?? [])].filter((p) => nodePath.isAbsolute(p)))
    .filter((p) => REPLACED.some((root) => isWithin(root, p) && p !== root))
    .filter((p) => !writable.some((w) => isWithin(w, p)) && !hidden.some((h) => isWithin(h, p)))
    .filter((p) => input.kindOf(p) !== "missing")

/** The command's environment: a few harmless variables, the caller's non-secret ones, the proxy's. */
const environment = (input: PolicyInput, proxied: boolean): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(input.hostEnv)) {
    if (value === undefined || input.isSecret(name, value)) continue
    if (PASSED_ENV.has(name) || name.startsWith("LC_")) env[name] = value
  }
  for (const [name, value] of Object.entries(input.env ?? {})) {
    if (value === undefined) delete env[name]
    else if (input.pass?.includes(name) === true || !input.isSecret(name, value)) env[name] = value
  }
  env["HOME"] = input.home
  env["TMPDIR"] = "/tmp"
  env["PATH"] ??= "/usr/local/bin:/usr/bin:/bin"
  for (const name of ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"]) delete env[name]
  if (proxied) {
    const url = `http://127.0.0.1:${PROXY_PORT}`
    Object.assign(env, { HTTP_PROXY: url, HTTPS_PROXY: url, http_proxy: url, https_proxy: url, NO_PROXY: "", no_proxy: "" })
  }
  return env
}

/** What the sandbox provides a command beside the policy: host paths it made for the session. */
export interface Runtime {
  /** The session's private temporary directory, the sandbox's `/tmp`. */
  readonly tmpDir: string
  /** An empty directory nothing writes to: the source of placeholders and hidden directories. */
  readonly emptyDir: string
  /** The proxy's Unix socket, when hosts are allowed. */
  readonly proxySocket?: string
  /** The bridge (`bridge.ts`) as a command, run inside before the command when hosts are allowed. */
  readonly bridge?: ReadonlyArray<string>
  /** Whether `/var/run` is a directory of its own rather than a link to `/run`. */
  readonly separateVarRun?: boolean
}

/** bubblewrap's arguments (everything after `bwrap`) that run `command args` under `policy`. */
export const bwrapArgs = (policy: Policy, runtime: Runtime, command: string, args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const out: Array<string> = [
    "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
    "--die-with-parent", "--cap-drop", "ALL",
    "--ro-bind", "/", "/",
    "--dev", "/dev",
    "--proc", "/proc",
    "--tmpfs", "/run"
  ]
  if (runtime.separateVarRun === true) out.push("--tmpfs", "/var/run")
  out.push("--bind", runtime.tmpDir, "/tmp")
  for (const path of policy.visible) out.push("--ro-bind", path, path)
  for (const path of policy.writable) out.push("--bind", path, path)
  for (const path of policy.pinned) out.push("--bind", path, path)
  for (const path of policy.readOnly) out.push("--ro-bind", path, path)
  for (const path of policy.placeholders) out.push("--ro-bind", runtime.emptyDir, path)
  for (const { kind, path } of policy.hidden) out.push("--ro-bind", kind === "dir" ? runtime.emptyDir : "/dev/null", path)
  if (runtime.proxySocket !== undefined) out.push("--ro-bind", runtime.proxySocket, PROXY_SOCKET_INSIDE)
  // a session of its own: no way to the caller's terminal (TIOCSTI), and nothing of the sandbox left
  // in the caller's process group once bubblewrap exits (its init, reaped by whoever adopts it, would
  // hold the group open); the group's SIGTERM ends bubblewrap, whose death kills all inside at once
  out.push("--new-session", "--disable-userns", "--clearenv")
  for (const [name, value] of Object.entries(policy.env)) out.push("--setenv", name, value)
  out.push("--chdir", policy.cwd, "--")
  if (runtime.bridge !== undefined && runtime.proxySocket !== undefined) out.push(...runtime.bridge)
  out.push(command, ...args)
  return out
}
