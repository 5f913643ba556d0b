/**
 * Opening workspace files component by component without following links, through
 * `/proc/self/fd` (Linux).
 */
import { describe } from "@effect/vitest"
import * as nodeFs from "node:fs"
import { confinedCases } from "../support/confinedCases.ts"

describe.skipIf(!nodeFs.existsSync("/proc/self/fd"))("confined opening through descriptors", () => {
  confinedCases(true)
})
