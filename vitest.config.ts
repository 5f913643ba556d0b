import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

const source = (path: string) => fileURLToPath(new URL(path, import.meta.url))

export default defineConfig({
  // Tests import the package by its name, as its users do (tsconfig.json maps the same names for tsc).
  resolve: {
    alias: [
      { find: /^effect-agent-loop$/, replacement: source("./src/index.ts") },
      { find: /^effect-agent-loop\/testing$/, replacement: source("./src/testing/index.ts") }
    ]
  },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // The CLI tests start real processes; on a 2-core machine more than a few at once only
    // compete for the CPU until their deadlines pass.
    maxConcurrency: 4,
    // The JSON report lets CI print its one-line summary from the very run the README names.
    reporters: ["default", ["json", { outputFile: ".tmp/vitest-report.json" }]]
  }
})
