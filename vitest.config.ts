import { defineConfig } from "vitest/config"

export default defineConfig({
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
