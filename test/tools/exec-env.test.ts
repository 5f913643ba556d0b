/**
 * `exec` runs whatever the model writes, so its environment must hold no credential: not the
 * variables whose names say they are one, not a value the program knows to be secret under an
 * innocent name, and not values that are credentials by their shape.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { exec, makeExec, Message, SecretsLive } from "effect-agent-loop"
import { isSecretEnv } from "../../src/tools/secretEnv.ts"
import { call, withWorkspace } from "../support/toolWorkspace.ts"

/** Sets `vars` in the process environment for the duration of `effect`. */
const withEnv = <A, E, R>(vars: Record<string, string>, effect: Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => Object.assign(process.env, vars)),
    () => effect,
    () => Effect.sync(() => Object.keys(vars).forEach((name) => delete process.env[name]))
  )

describe("exec's environment", () => {
  it.effect("withholds registered secrets under any name, credential-looking names, and credential-shaped values", () =>
    withWorkspace(() =>
      Effect.gen(function*() {
        const vars = {
          T_INNOCENT: "registered-secret-value-123",
          T_GITHUB_TOKEN: "a",
          T_AWS_SECRET_ACCESS_KEY: "b",
          T_DB_PASSWORD: "c",
          T_SIGNING_PASSPHRASE: "d",
          T_GH_PAT: "e",
          T_SENTRY_DSN: "f",
          T_PRIVATE_KEY_PEM: "g",
          T_DATABASE_URL: "postgres://app:hunter2@db.internal:5432/app",
          T_CONFIGURED: "sk-ant-api03-abcdefghijklmnop",
          T_GH: "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
          T_PLAIN: "visible",
          T_PATHLIKE: "/usr/bin",
          T_URL: "https://example.com/x"
        }
        const names = Object.keys(vars)
        const output = yield* withEnv(
          vars,
          call(exec, { command: names.map((n) => `echo "${n}=[$${n}]"`).join("; ") })
        ).pipe(Effect.provide(SecretsLive.layer(["registered-secret-value-123"])))
        expect(Message.textOf(output.content).split("\n").slice(1, -1)).toEqual([
          ...names.slice(0, -3).map((n) => `${n}=[]`),
          "T_PLAIN=[visible]",
          "T_PATHLIKE=[/usr/bin]",
          "T_URL=[https://example.com/x]"
        ])
      })
    ))

  it.effect("keeps PATH, HOME and PWD, and stripSecretEnv: false passes everything", () =>
    withWorkspace(() =>
      Effect.gen(function*() {
        const kept = yield* call(exec, { command: `test -n "$PATH" && test -n "$HOME" && echo ok` })
        expect(kept.content).toBe("exit code: 0\nok\n")
        const all = yield* withEnv(
          { T_API_KEY: "sk-visible-when-asked" },
          call(makeExec({ stripSecretEnv: false }), { command: `echo "$T_API_KEY"` })
        )
        expect(all.content).toBe("exit code: 0\nsk-visible-when-asked\n")
      })
    ))

  it("isSecretEnv is the one documented rule", () => {
    const none = { scrub: (text: string) => text }
    expect(isSecretEnv("OPENAI_API_KEY", "x", none)).toBe(true)
    expect(isSecretEnv("PATH", "/usr/bin", none)).toBe(false)
    expect(isSecretEnv("PWD", "/home/me", none)).toBe(false)
    expect(isSecretEnv("LANG", "C.UTF-8", none)).toBe(false)
    expect(isSecretEnv("X", "value", { scrub: (text) => text.replace("value", "<redacted>") })).toBe(true)
  })
})
