/**
 * The CLI's session stores end to end, through the real CLI process against the scripted
 * OpenAI-compatible server on 127.0.0.1: SQLite in the data directory by default (private, listed,
 * damage shown per session, two processes on one session at once), `sessions import` of JSON Lines
 * sessions (what it says, idempotent, continued sessions extended, conflicts skipped), and
 * `--store postgres` on a throwaway server (skipped, saying why, without Postgres).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { DatabaseSync } from "node:sqlite"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { sessionId } from "../../src/layers/internal/sessionStoreSqlSchema.ts"
import { isolatedEnv, runCli, tempDir, type TestContext } from "../support/cliProcess.ts"
import { type Script, start } from "../support/openaiServer.ts"
import { type PostgresServer, postgresProbe, postgresSuite, startPostgres } from "../support/postgres.ts"

/** A server and a home; `run` runs one turn in a session with extra flags. */
const setup = async (context: TestContext, script: Script) => {
  const server = await start(script)
  context.onTestFinished(() => server.close())
  const home = tempDir()
  const env = isolatedEnv(home)
  const flags = ["--base-url", server.url, "--model", "fake-model", "--workspace", home]
  const run = async (session: string, prompt: string, extra: ReadonlyArray<string> = []) => {
    const result = await runCli(["run", ...flags, ...extra, "--session", session, prompt], { env })
    expect(result.code, result.stderr).toBe(0)
  }
  const data = path.join(home, "data")
  return { env, run, data, home, database: path.join(data, "sessions.db"), sessions: path.join(data, "sessions") }
}

const TIME = "\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d"
const SLOW = 120_000

describe("agent-loop on its default store, SQLite", () => {
  it("saves to sessions.db in the private data directory; list and show read it; the JSON Lines store is another store", async (context) => {
    const { data, database, env, run, sessions, home } = await setup(context, [{ text: "one" }])
    await run("work", "first question")
    const mode = (file: string) => (fs.statSync(file).mode & 0o777).toString(8)
    const pointers = path.join(data, "last-sessions")
    expect([mode(data), mode(database), mode(pointers), mode(path.join(pointers, fs.readdirSync(pointers)[0]!))])
      .toEqual(["700", "600", "700", "600"])
    expect(fs.existsSync(sessions)).toBe(false)
    const listed = await runCli(["sessions", "list"], { env, cwd: home })
    expect(listed.stdout).toMatch(new RegExp(`^\\* work  ${TIME}  2 messages  first question\n$`))
    expect((await runCli(["sessions", "show", "work"], { env })).stdout).toBe("user: first question\nassistant: one\n")
    const jsonl = await runCli(["sessions", "list", "--store", "jsonl"], { env })
    expect(jsonl.stderr).toBe(`no sessions yet in ${sessions}\n`)
  }, SLOW)

  it("a damaged entry: list shows that session unreadable with why, the others as usual; show fails with one line", async (context) => {
    const { database, env, run, home } = await setup(context, [{ text: "one" }, { text: "two" }])
    await run("good", "fine question")
    await run("broken", "another question")
    const db = new DatabaseSync(database)
    // entry 0 is the question, 1 the answer, 2 the turn's outcome record, 3 the metadata record naming the workspace (written at the end)
    db.prepare("UPDATE agent_loop_entries SET entry = ? WHERE session_id = ? AND seq = 1").run("{\"role\":\"assis", sessionId("broken"))
    db.close()
    const listed = await runCli(["sessions", "list", "--workspace", home], { env })
    expect(listed.code).toBe(0)
    expect(listed.stdout).toMatch(new RegExp(`^  good  ${TIME}  2 messages  fine question$`, "m"))
    expect(listed.stdout).toContain(`* broken  unreadable: cannot read session: session "broken": entry 2 of 4 is corrupt\n`)
    const shown = await runCli(["sessions", "show", "broken"], { env })
    expect(shown.code).toBe(1)
    expect(shown.stderr).toBe(`agent-loop: cannot read session: session "broken": entry 2 of 4 is corrupt\n`)
  }, SLOW)

  it("two agent-loop processes running turns in one session at once: both turns are saved whole", async (context) => {
    const { env, run } = await setup(context, [{ text: "answer" }, { text: "answer" }])
    await Promise.all([run("shared", "from the first"), run("shared", "from the second")])
    const shown = (await runCli(["sessions", "show", "shared"], { env })).stdout.split("\n")
    expect(shown).toHaveLength(5)
    expect(shown.filter((line) => line.startsWith("user:")).sort()).toEqual(["user: from the first", "user: from the second"])
    expect([shown[1], shown[3]]).toEqual(["assistant: answer", "assistant: answer"])
  }, SLOW)
})

describe("agent-loop sessions import", () => {
  it("imports JSON Lines sessions, says what it did, is safe to repeat, extends continued sessions and skips conflicts", async (context) => {
    const { env, run, sessions } = await setup(context, [{ text: "a" }, { text: "b" }, { text: "c" }, { text: "d" }])
    await run("first", "question one", ["--store", "jsonl"])
    await run("second", "question two", ["--store", "jsonl"])
    const imported = await runCli(["sessions", "import", sessions], { env })
    expect(imported.code, imported.stderr).toBe(0)
    expect(imported.stdout).toBe("imported first: 2 messages\nimported second: 2 messages\n")
    expect(imported.stderr).toBe(`sessions from ${sessions} into ${path.join(sessions, "..", "sessions.db")}: 2 imported, 0 extended, 0 already there, 0 skipped\n`)
    expect((await runCli(["sessions", "show", "second"], { env })).stdout).toBe("user: question two\nassistant: b\n")

    await run("first", "question three", ["--store", "jsonl"])
    await run("second", "a different continuation") // in SQLite: the JSON Lines copy no longer matches
    fs.writeFileSync(path.join(sessions, "s-broken.jsonl"), "{\"sessionKey\":\"broken\"}\nnot json\n{\"role\":\"user\",\"content\":\"x\"}\n")
    const again = await runCli(["sessions", "import", sessions], { env })
    expect(again.code).toBe(1)
    expect(again.stdout.split("\n").sort()).toEqual([
      "",
      "extended first: 2 new messages",
      "skipped broken: session file s-broken.jsonl: line 2 of 3 is corrupt",
      "skipped second: the store holds a different session under this key"
    ])
    expect(again.stderr).toContain(": 0 imported, 1 extended, 0 already there, 2 skipped\n")
    expect(again.stderr).toContain("agent-loop: 2 sessions could not be imported\n")
    const third = await runCli(["sessions", "import", sessions], { env })
    expect(third.stdout).toContain("already imported first\n")
    expect((await runCli(["sessions", "show", "first"], { env })).stdout).toBe(
      "user: question one\nassistant: a\nuser: question three\nassistant: c\n"
    )
    const missing = await runCli(["sessions", "import", path.join(sessions, "nope")], { env })
    expect(missing.stderr).toBe(`agent-loop: no directory ${path.join(sessions, "nope")} to import sessions from\n`)
  }, SLOW)
})

describe.skipIf(!postgresProbe.ok)(postgresSuite("agent-loop --store postgres"), () => {
  let server: PostgresServer | undefined
  beforeAll(async () => {
    server = await startPostgres()
  }, 120_000)
  afterAll(() => server?.stop())

  it("runs and lists sessions in the database of --database-url or AGENT_LOOP_DATABASE_URL; without one, fails with one line", async (context) => {
    const { env, run, home } = await setup(context, [{ text: "one" }, { text: "two" }])
    await server!.createDatabase("cli")
    const url = server!.url("cli")
    await run("work", "first question", ["--store", "postgres", "--database-url", url])
    const viaEnv = { ...env, AGENT_LOOP_STORE: "postgres", AGENT_LOOP_DATABASE_URL: url }
    await run("work", "second question", [])
    const listed = await runCli(["sessions", "list", "--store", "postgres", "--database-url", url, "--workspace", home], { env })
    expect(listed.stdout).toMatch(new RegExp(`^\\* work  ${TIME}  2 messages  first question\n$`))
    const shown = await runCli(["sessions", "show", "work"], { env: viaEnv })
    expect(shown.stdout).toBe("user: first question\nassistant: one\n")
    const without = await runCli(["sessions", "list", "--store", "postgres"], { env })
    expect(without.code).toBe(1)
    expect(without.stderr).toBe("agent-loop: --store postgres needs --database-url URL (or AGENT_LOOP_DATABASE_URL)\n")
  }, SLOW)
})
