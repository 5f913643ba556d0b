/**
 * The same cases as `confined.test.ts`, run the way systems without `/proc/self/fd` (macOS,
 * the BSDs) run them: by name, checking each component with `lstat`.
 */
import { describe } from "@effect/vitest"
import { vi } from "vitest"
import { confinedCases } from "../support/confinedCases.ts"

vi.mock("node:fs", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:fs")>()
  return { ...actual, existsSync: (path: string) => path === "/proc/self/fd" ? false : actual.existsSync(path) }
})

describe("confined opening by name", () => {
  confinedCases(false)
})
