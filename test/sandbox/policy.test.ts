/**
 * The sandbox's policy as a pure function, without running anything: what is writable, read-only,
 * held and hidden for a workspace laid out on paper; the environment a command gets; bubblewrap's
 * arguments in the order that makes the later mounts win; the proxy's host matching; and the guess
 * that a failed command was stopped by the sandbox.
 */
import { describe, expect, it } from "@effect/vitest"
import { PROTECTED_LOCATIONS } from "effect-agent-loop"
import * as SandboxPolicy from "../../src/layers/sandbox/policy.ts"
import { matchHost } from "../../src/layers/sandbox/proxy.ts"
import { denialOf } from "../../src/layers/sandbox/internal.ts"

const files = (dirs: ReadonlyArray<string>, plain: ReadonlyArray<string> = []) => (path: string): SandboxPolicy.PathKind =>
  dirs.includes(path) ? "dir" : plain.includes(path) ? "file" : "missing"

const input = (over: Partial<SandboxPolicy.PolicyInput> = {}): SandboxPolicy.PolicyInput => ({
  workspace: "/w",
  cwd: "/w",
  home: "/h",
  git: { dir: "/w/.git", commonDir: "/w/.git", hooks: "/w/.git/hooks" },
  kindOf: files(["/", "/w", "/w/.git", "/w/.git/hooks", "/w/.claude", "/h", "/h/.ssh", "/h/.config/agent-loop"], ["/w/.git/config", "/h/.netrc"]),
  hostEnv: { PATH: "/usr/bin:/bin", HOME: "/h", LANG: "C.UTF-8", LC_ALL: "C", OPENAI_API_KEY: "sk-x", EDITOR: "vim", GH_TOKEN: "ghp_x" },
  isSecret: (name, value) => /KEY|TOKEN/.test(name) || value.startsWith("sk-"),
  userDirs: ["/h/.config/agent-loop", "/h/.local/share/agent-loop"],
  ...over
})

describe("the sandbox's policy", () => {
  it("writes the workspace and its git directory, holds git's hooks and config and the protected locations that exist", () => {
    const policy = SandboxPolicy.compile(input())
    expect(policy.writable).toEqual(["/w"])
    expect(policy.pinned).toEqual(["/w/.git"])
    expect(policy.readOnly).toEqual(["/w/.claude", "/w/.git/hooks", "/w/.git/config"])
    expect(policy.placeholders).toEqual([])
    // the protected locations that do not exist are watched, not held (no placeholder in the user's tree)
    expect(policy.absent).toEqual(PROTECTED_LOCATIONS.filter((l) => l !== ".git" && l !== ".claude").map((l) => `/w/${l}`))
    expect(policy.hidden).toEqual([
      { path: "/h/.ssh", kind: "dir" },
      { path: "/h/.netrc", kind: "file" },
      { path: "/h/.config/agent-loop", kind: "dir" }
    ])
  })

  it("writes a linked worktree's common directory, holds its config and hooks, and the worktree's .git pointer", () => {
    const policy = SandboxPolicy.compile(input({
      workspace: "/wt",
      cwd: "/wt/src",
      git: { dir: "/r/.git/worktrees/wt", commonDir: "/r/.git", hooks: "/r/.git/hooks" },
      kindOf: files(["/", "/wt", "/wt/src", "/r", "/r/.git", "/r/.git/worktrees/wt", "/r/.git/hooks"], ["/wt/.git", "/r/.git/config"])
    }))
    expect(policy.writable).toEqual(["/wt", "/r/.git"])
    expect([...policy.readOnly].sort()).toEqual(["/r/.git/config", "/r/.git/hooks", "/wt/.git"])
    expect(policy.pinned).toEqual([])
    expect(policy.cwd).toBe("/wt/src")
  })

  it("binds back, read-only, the PATH directories and programs under the /tmp and /run it replaces", () => {
    const policy = SandboxPolicy.compile(input({
      hostEnv: { PATH: "/tmp/ci/node_modules/.bin:/tmp/gone:/usr/bin:/run/user/1/bin:/tmp/ci/ws/bin" },
      programs: ["/tmp/ci/node_modules/node/bin/node"],
      workspace: "/tmp/ci/ws",
      cwd: "/tmp/ci/ws",
      kindOf: files(["/", "/tmp", "/tmp/ci", "/tmp/ci/ws", "/tmp/ci/ws/bin", "/tmp/ci/node_modules", "/tmp/ci/node_modules/.bin", "/run/user/1/bin", "/usr/bin"], [
        "/tmp/ci/node_modules/node/bin/node"
      ])
    }))
    // node_modules/.bin stands for its node_modules (its entries are links there); a missing
    // directory is left out, and one inside the workspace is bound writable already
    expect(policy.visible).toEqual(["/tmp/ci/node_modules", "/run/user/1/bin", "/tmp/ci/node_modules/node/bin/node"])
    const args = SandboxPolicy.bwrapArgs(policy, { tmpDir: "/host/tmp/s", emptyDir: "/host/empty" }, "sh", [])
    const at = (flag: string, path: string) => args.findIndex((a, i) => a === flag && args[i + 1] === path)
    expect(at("--ro-bind", "/tmp/ci/node_modules")).toBeGreaterThan(at("--bind", "/host/tmp/s"))
    expect(at("--ro-bind", "/run/user/1/bin")).toBeGreaterThan(args.indexOf("/run"))
  })

  it("holds git's hooks directory before it exists, with an empty read-only placeholder", () => {
    const policy = SandboxPolicy.compile(input({ kindOf: files(["/", "/w", "/w/.git"], ["/w/.git/config"]) }))
    expect(policy.placeholders).toEqual(["/w/.git/hooks"])
    expect(policy.absent).not.toContain("/w/.git/hooks")
  })

  it("watches for a repository the command makes (git init): nothing holds its hooks before it exists", () => {
    const policy = SandboxPolicy.compile(input({ git: {}, kindOf: files(["/", "/w"]) }))
    expect(policy.absent).toContain("/w/.git")
    expect(policy.pinned).toEqual([])
  })

  it("adds the paths the user allowed and denied, and hides the paths of Read deny rules", () => {
    const policy = SandboxPolicy.compile(input({
      allowWrite: ["/cache", "/w/sub"],
      denyWrite: ["/w/locked"],
      denyRead: ["/w/.env", "/nowhere"],
      kindOf: files(["/", "/w", "/w/.git", "/cache", "/w/sub", "/w/locked"], ["/w/.env"])
    }))
    expect(policy.writable).toEqual(["/w", "/cache"])
    expect(policy.readOnly).toContain("/w/locked")
    expect(policy.hidden).toEqual([{ path: "/w/.env", kind: "file" }])
  })

  it("gives a command a minimal environment without secrets, with the proxy only when a host is allowed", () => {
    const plain = SandboxPolicy.compile(input({ env: { EDITOR: "nano", DEBUG: "1", MY_TOKEN: "t", PATH: undefined } }))
    expect(plain.env).toEqual({ HOME: "/h", LANG: "C.UTF-8", LC_ALL: "C", TMPDIR: "/tmp", EDITOR: "nano", DEBUG: "1", PATH: "/usr/local/bin:/usr/bin:/bin" })
    const proxied = SandboxPolicy.compile(input({ allowedHosts: ["example.com"] }))
    expect(proxied.env).toMatchObject({ HTTP_PROXY: "http://127.0.0.1:3128", https_proxy: "http://127.0.0.1:3128", NO_PROXY: "" })
  })

  it("orders bubblewrap's mounts so the later ones win: root read-only, private /tmp, writable trees, then held and hidden paths", () => {
    const policy = SandboxPolicy.compile(input({ allowedHosts: ["example.com"] }))
    const args = SandboxPolicy.bwrapArgs(policy, { tmpDir: "/s/tmp", emptyDir: "/s/empty", proxySocket: "/s/proxy.sock", bridge: ["node", "-e", "B", "--", "sock", "3128"] }, "sh", ["-c", "true"])
    const at = (...words: ReadonlyArray<string>) => args.findIndex((_, i) => words.every((w, k) => args[i + k] === w))
    for (const flag of ["--unshare-user", "--unshare-pid", "--unshare-net", "--die-with-parent", "--new-session", "--disable-userns", "--clearenv"]) {
      expect(args).toContain(flag)
    }
    expect(at("--cap-drop", "ALL")).toBeGreaterThanOrEqual(0)
    expect(at("--ro-bind", "/", "/")).toBeLessThan(at("--bind", "/s/tmp", "/tmp"))
    expect(at("--bind", "/s/tmp", "/tmp")).toBeLessThan(at("--bind", "/w", "/w"))
    expect(at("--bind", "/w", "/w")).toBeLessThan(at("--bind", "/w/.git", "/w/.git"))
    expect(at("--bind", "/w/.git", "/w/.git")).toBeLessThan(at("--ro-bind", "/w/.git/hooks", "/w/.git/hooks"))
    expect(at("--ro-bind", "/s/empty", "/h/.ssh")).toBeGreaterThan(at("--ro-bind", "/w/.claude", "/w/.claude"))
    expect(at("--ro-bind", "/dev/null", "/h/.netrc")).toBeGreaterThan(0)
    expect(at("--ro-bind", "/s/proxy.sock", SandboxPolicy.PROXY_SOCKET_INSIDE)).toBeGreaterThan(0)
    expect(args.slice(at("--chdir", "/w"))).toEqual(["--chdir", "/w", "--", "node", "-e", "B", "--", "sock", "3128", "sh", "-c", "true"])
  })

  it("names the loop's own directories as the CLI does", () => {
    expect(SandboxPolicy.userDirsOf({ XDG_CONFIG_HOME: "/x/conf", AGENT_LOOP_DATA_DIR: "/d" }, "/h")).toEqual([
      "/x/conf/agent-loop", "/h/.local/share/agent-loop", "/h/.config/agent-loop", "/h/.local/share/agent-loop", "/d"
    ])
  })
})

describe("the proxy's host matching", () => {
  it("matches names, subdomain wildcards, ports and IPv6, a named host before a wildcard", () => {
    const hosts = ["example.com", "*.npmjs.org", "127.0.0.1:8080", "[::1]:9000", "localhost"]
    expect(matchHost(hosts, "example.com", 443)).toBe("named")
    expect(matchHost(hosts, "EXAMPLE.com.", 80)).toBe("named")
    expect(matchHost(hosts, "www.example.com", 443)).toBe("no")
    expect(matchHost(hosts, "registry.npmjs.org", 443)).toBe("wildcard")
    expect(matchHost(hosts, "npmjs.org", 443)).toBe("no")
    expect(matchHost(hosts, "127.0.0.1", 8080)).toBe("named")
    expect(matchHost(hosts, "127.0.0.1", 8081)).toBe("no")
    expect(matchHost(hosts, "[::1]", 9000)).toBe("named")
    expect(matchHost(["*"], "anything.example", 1)).toBe("wildcard")
  })
})

describe("the guess that the sandbox stopped a command", () => {
  const policy = SandboxPolicy.compile(input())
  it("names a read-only write, a refused host, a missing network and a denied path outside the writable ones", () => {
    expect(denialOf(policy, 0, "Read-only file system")).toBeUndefined()
    expect(denialOf(policy, 1, "touch: cannot touch '/etc/x': Read-only file system")).toContain("read-only place")
    expect(denialOf(policy, 56, "curl: (56) CONNECT tunnel failed, response 403")).toContain("proxy refused")
    expect(denialOf(policy, 6, "curl: (6) Could not resolve host: example.com")).toContain("no network")
    expect(denialOf(policy, 1, "cat: /h/.ssh/id_rsa: Permission denied")).toContain("/h/.ssh/id_rsa")
    expect(denialOf(policy, 1, "cat: /w/secret.txt: Permission denied")).toBeUndefined()
    expect(denialOf(policy, 1, "error: tests failed")).toBeUndefined()
  })
})
