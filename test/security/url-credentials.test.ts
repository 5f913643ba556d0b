/**
 * Credentials inside URLs: a password with or without a user (`postgres://u:pw@h`,
 * `redis://:pw@h`) and an `http(s)` URL's user part (`https://TOKEN@host`). A variable holding one
 * is withheld from `exec` (and from hook scripts, `test/hooks/hook-env.test.ts`), and a value
 * registered in `Secrets` also registers the credential on its own, so it is scrubbed wherever it
 * turns up without the rest of the URL.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { exec, Message, SecretsLive } from "effect-agent-loop"
import { isSecretEnv, SECRET_VALUE_PATTERN } from "../../src/tools/secretEnv.ts"
import { urlCredentials } from "../../src/domain/urlCredentials.ts"
import * as Secrets from "../../src/services/Secrets.ts"
import { looksSecret, scrubbedEnv } from "../../src/tools/secretEnv.ts"
import { call, withWorkspace } from "../support/toolWorkspace.ts"

describe("credentials in URLs", () => {
  it("are found: a password in any scheme, with or without a user; the user part of an http(s) URL", () => {
    expect(urlCredentials("redis://:s3cret-pw@cache:6379/0")).toEqual(["s3cret-pw"])
    expect(urlCredentials("postgres://app:p%40ss@db/app")).toEqual(["p%40ss", "p@ss"])
    expect(urlCredentials("https://ghp_token0123@github.com/o/r.git")).toEqual(["ghp_token0123"])
    expect(urlCredentials("git+https://tok-0123456789:x-oauth-basic@github.com/o/r")).toEqual(["x-oauth-basic", "tok-0123456789"])
    expect(urlCredentials("clone it: git clone HTTPS://tok-abc@host/r and go")).toEqual(["tok-abc"])
    // a user name in another scheme is a name; a URL without user info holds nothing
    expect(urlCredentials("postgres://app@db/app")).toEqual([])
    expect(urlCredentials("ssh://git@github.com/o/r.git")).toEqual([])
    expect(urlCredentials("https://example.com:8443/a@b")).toEqual([])
    expect(urlCredentials("redis://:@cache")).toEqual([])
    expect(urlCredentials("plain text")).toEqual([])
  })

  it("make a value secret: withheld whatever the variable is called", () => {
    for (const value of ["redis://:pw@h", "postgres://u:pw@h/db", "https://TOKEN@host", "https://user:pw@host/x", "x https://t@h"]) {
      expect(SECRET_VALUE_PATTERN.test(value), value).toBe(true)
      expect(looksSecret("SOME_URL", value), value).toBe(true)
    }
    for (const value of ["https://example.com/x", "https://host:8080/path", "ssh://git@github.com/r", "postgres://app@db/app", "redis://cache:6379"]) {
      expect(SECRET_VALUE_PATTERN.test(value), value).toBe(false)
    }
  })

  it("take linear time on hostile text", () => {
    const MB = 1024 * 1024
    for (const text of ["://" + "a".repeat(MB), "https://" + ":".repeat(MB), "://:".repeat(MB / 4), "https://a".repeat(MB / 9)]) {
      const started = performance.now()
      expect(urlCredentials(text)).toEqual([])
      SECRET_VALUE_PATTERN.test(text)
      expect(performance.now() - started).toBeLessThan(2_000)
    }
  })

  it("registered with a URL, the credential is scrubbed on its own too, as written and decoded", () => {
    const registry = Secrets.make()
    registry.add(["redis://:redis-pw-0123@cache/0", "https://tok%2Ben-0123456@git.example.com/r", "postgres://app:pg-pw-0123@db/app"])
    expect(registry.scrub("auth redis-pw-0123; token tok+en-0123456 or tok%2Ben-0123456; pg-pw-0123; user app"))
      .toBe("auth <redacted>; token <redacted> or <redacted>; <redacted>; user app")
  })

  it("scrubbedEnv withholds what isSecretEnv says, and gives the variables passed by name", () => {
    const env = { PATH: "/usr/bin", CACHE: "redis://:pw@h", REPO: "https://TOKEN@host/r", GITHUB_TOKEN: "t", KNOWN: "has known-secret-123 in it" }
    const secrets = { scrub: (text: string) => text.replace("known-secret-123", "<redacted>") }
    expect(scrubbedEnv(env, { secrets })).toEqual({ PATH: "/usr/bin" })
    expect(scrubbedEnv(env, { secrets, pass: ["REPO", "KNOWN", "ABSENT"] })).toEqual({ PATH: "/usr/bin", REPO: "https://TOKEN@host/r", KNOWN: env.KNOWN })
    expect(Object.keys(env).filter((name) => isSecretEnv(name, env[name as keyof typeof env], secrets))).toEqual(["CACHE", "REPO", "GITHUB_TOKEN", "KNOWN"])
  })

  it.effect("exec sees no URL with a password or a token, whatever the variable is called", () =>
    withWorkspace(() =>
      Effect.gen(function*() {
        const vars = {
          T_CACHE: "redis://:redis-pw@cache.internal:6379/0",
          T_REPO: "https://repo-token-0123@git.example.com/o/r.git",
          T_MIRROR: "git+https://user:mirror-pw@mirror.example.com/r",
          T_SITE: "https://example.com/docs"
        }
        Object.assign(process.env, vars)
        const output = yield* call(exec, { command: Object.keys(vars).map((n) => `echo "${n}=[$${n}]"`).join("; ") }).pipe(
          Effect.ensuring(Effect.sync(() => Object.keys(vars).forEach((name) => delete process.env[name]))),
          Effect.provide(SecretsLive.layer())
        )
        expect(Message.textOf(output.content).split("\n").slice(1, -1)).toEqual(["T_CACHE=[]", "T_REPO=[]", "T_MIRROR=[]", "T_SITE=[https://example.com/docs]"])
      })
    ))
})
