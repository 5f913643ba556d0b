/**
 * Answers rendered as Markdown in a real terminal (tmux), streamed in small pieces, at 80×24 and
 * 200×50, in colour; and left as typed with `NO_COLOR` and `TERM=dumb`. Skipped, saying so, when
 * tmux is not installed.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { isolatedEnv, launcher, root, tempDir, type TestContext } from "../support/cliProcess.ts"
import { start } from "../support/openaiServer.ts"
import { hasTmux, startPane } from "../support/tmux.ts"

const ANSWER = "# Plan\n\nUse **pnpm** and the `lint` script:\n\n- first\n- second\n\n| tool | ok |\n|---|---|\n| pnpm | yes |\n| npm | no |\n\n```sh\npnpm lint # check\n```\nDone."

/** The answer cut into pieces of 3 characters, as a model streams it. */
const pieces = (text: string) => Array.from({ length: Math.ceil(text.length / 3) }, (_, i) => text.slice(i * 3, i * 3 + 3))

const runInPane = async (context: TestContext, size: { columns: number; rows: number }, env: Record<string, string> = {}) => {
  const server = await start([{ text: pieces(ANSWER) }])
  const home = tempDir()
  const workspace = path.join(home, "ws")
  fs.mkdirSync(workspace)
  // tmux sets TERM in its panes: a TERM of the test's own goes through env(1)
  const term = env["TERM"] === undefined ? [] : ["env", `TERM=${env["TERM"]}`]
  const pane = startPane(
    [...term, process.execPath, launcher, "run", "--base-url", server.url, "--model", "fake-model", "--workspace", workspace, "--ephemeral", "go"],
    { ...isolatedEnv(home), ...env },
    root,
    size
  )
  context.onTestFinished(async () => {
    pane.kill()
    await server.close()
  })
  return pane
}

describe.skipIf(!hasTmux).concurrent(hasTmux ? "answers as Markdown on a terminal (tmux)" : "answers as Markdown on a terminal: SKIPPED because tmux is not installed", () => {
  for (const size of [{ columns: 80, rows: 24 }, { columns: 200, rows: 50 }]) {
    it(`renders headings, emphasis, code, lists, tables and code blocks at ${size.columns}×${size.rows}`, async (context) => {
      const pane = await runInPane(context, size)
      const shown = await pane.waitFor(/── completed/)
      expect(shown).toMatch(/^Plan$/m)
      expect(shown).toMatch(/^Use pnpm and the lint script:$/m)
      expect(shown).toMatch(/^• first$/m)
      expect(shown).toMatch(/^tool │ ok$/m)
      expect(shown).toMatch(/^─+┼─+$/m)
      expect(shown).toMatch(/^pnpm │ yes$/m)
      expect(shown).toMatch(/^npm  │ no$/m)
      expect(shown).toMatch(/^pnpm lint # check$/m)
      expect(shown).not.toContain("**")
      const styled = pane.captureStyled()
      // bold and code colour reach the terminal
      expect(styled).toMatch(/\u001b\[1m[^\n]*pnpm/)
      expect(styled).toMatch(/\u001b\[36m[^\n]*lint/)
      expect(await pane.exitStatus()).toBe(0)
    })
  }

  for (const env of [{ NO_COLOR: "1" }, { TERM: "dumb" }]) {
    it(`leaves the answer as typed with ${Object.entries(env)[0]!.join("=")}`, async (context) => {
      const pane = await runInPane(context, { columns: 80, rows: 24 }, env)
      const shown = await pane.waitFor(/── completed/)
      expect(shown).toContain("Use **pnpm** and the `lint` script:")
      expect(shown).toMatch(/^\| pnpm \| yes \|$/m)
      expect(shown).toMatch(/^```sh$/m)
    })
  }
})
