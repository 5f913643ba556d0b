/**
 * Runs a script of this repository against the TypeScript sources: `effect-agent-loop` and
 * `effect-agent-loop/testing` resolve to `src/`, as `tsconfig.json` and the vitest alias map them,
 * instead of to the built `dist/` (which Node's own resolution of the package's name would load).
 * The examples import the package by its name, as an application does; `npm run example FILE`
 * runs one with this hook:
 *
 *     node --import ./scripts/sources.ts examples/hooks.ts
 */
import { registerHooks } from "node:module"

const sources: Readonly<Record<string, string>> = {
  "effect-agent-loop": new URL("../src/index.ts", import.meta.url).href,
  "effect-agent-loop/testing": new URL("../src/testing/index.ts", import.meta.url).href
}

registerHooks({
  resolve: (specifier, context, next) => {
    const url = sources[specifier]
    return url === undefined ? next(specifier, context) : { url, shortCircuit: true }
  }
})
