/**
 * The package as its users get it: `npm pack` (which builds `dist/` from the current sources), the
 * tarball installed into a fresh app, then used the ways users use it — plain Node importing it,
 * CommonJS requiring it, a TypeScript app compiled by `tsc` with ordinary settings, an app bundled
 * by esbuild, and the `agent-loop` command.
 *
 * Offline: the install uses an empty private npm cache with `--offline`, so it cannot fetch
 * anything; the app's own `effect`, `@effect/platform-node` and `@effect/sql-pg` (the optional peer
 * the cluster's examples use) are links to the packages `npm ci` installed for this repository (as
 * an app would have its own copies; a single copy of each, so the library and the app share one
 * runtime).
 */
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { isolatedEnv, root, tempDir } from "../support/cliProcess.ts"
import { start } from "../support/openaiServer.ts"
import {
  bundledConsumer,
  documentedExamples,
  ESM_REQUIRE_BANNER,
  plainConsumer,
  requireConsumer,
  typedConsumer,
  typedTsconfig,
  vertexConsumer
} from "../support/packagedApps.ts"

interface Finished {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs a command to its end. `PATH` starts with this Node's directory, so a `node` shebang means Node 24. */
const run = (command: string, args: ReadonlyArray<string>, cwd: string, env: Record<string, string> = process.env as Record<string, string>) =>
  new Promise<Finished>((resolve, reject) => {
    const child = spawn(command, args, {
      cwd,
      env: { ...env, PATH: `${path.dirname(process.execPath)}${path.delimiter}${env.PATH ?? ""}` },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (text: string) => (stdout += text))
    child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text))
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, stdout, stderr }))
  })

/** Fails with everything the command printed unless it exited 0. */
const succeeded = (result: Finished) => {
  if (result.code !== 0) throw new Error(`exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`)
  return result
}

const packageJson = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"))
const installed = (app: string) => path.join(app, "node_modules", "effect-agent-loop")


/** The repository's own installed copy of a package, linked into the app. */
const linked = (name: string) => `file:${path.join(root, "node_modules", name)}`

// Child processes (npm, tsc, node) on a shared machine: generous deadlines, far above the ~10 s it takes alone.
describe.concurrent("the packed package, installed into a fresh app", { timeout: 180_000 }, () => {
  let tarball: { readonly filename: string; readonly size: number; readonly files: ReadonlyArray<{ readonly path: string }> }
  let app: string

  beforeAll(async () => {
    const work = tempDir("agent-loop-pack-")
    const packed = succeeded(await run("npm", ["pack", "--json", "--pack-destination", work], root))
    // npm prints the build's output before the JSON.
    tarball = JSON.parse(packed.stdout.slice(packed.stdout.indexOf("[\n")))[0]
    app = path.join(work, "app")
    fs.mkdirSync(app)
    fs.writeFileSync(
      path.join(app, "package.json"),
      JSON.stringify({
        name: "app",
        private: true,
        type: "module",
        dependencies: {
          "effect-agent-loop": `file:${path.join(work, tarball.filename)}`,
          effect: linked("effect"),
          "@effect/platform-node": linked("@effect/platform-node"),
          "@effect/sql-pg": linked("@effect/sql-pg"),
          // the library's one dependency (web_fetch's HTML to Markdown) and its own, as npm would have installed them
          turndown: linked("turndown"),
          "@mixmark-io/domino": linked("@mixmark-io/domino")
        },
        // the A2A client the docs' example calls the agent with, as an app that calls it has it
        devDependencies: { "@types/node": linked("@types/node"), "@a2a-js/sdk": linked("@a2a-js/sdk") }
      })
    )
    // --legacy-peer-deps: the peers are the linked packages above (npm's peer placement trips over
    // links); --ignore-scripts: the tarball's `prepare` is for git installs, and a registry install
    // does not run it either.
    succeeded(
      await run("npm", [
        "install",
        "--offline",
        "--cache",
        path.join(work, "npm-cache"),
        "--legacy-peer-deps",
        "--ignore-scripts",
        "--no-audit",
        "--no-fund"
      ], app)
    )
  }, 240_000)

  it("holds what users need and no tests; effect comes from the app", () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(installed(app), "package.json"), "utf8"))
    // one dependency of its own: turndown, for web_fetch (loaded only when it converts a page)
    expect(manifest.dependencies).toEqual({ turndown: "^7.2.5" })
    // The optional ones are loaded on first use only: Vertex AI's Google credentials, Bedrock's AWS packages, Postgres,
    // and the protocols' SDKs (agent-loop acp, agent-loop mcp serve)
    const optional = [
      "@agentclientprotocol/sdk", "@aws-crypto/sha256-js", "@aws-sdk/credential-providers", "@effect/sql-pg", "@modelcontextprotocol/sdk",
      "@smithy/eventstream-codec", "@smithy/signature-v4", "google-auth-library"
    ]
    expect(Object.keys(manifest.peerDependencies).sort()).toEqual([...optional, "@effect/platform-node", "effect"].sort())
    expect(manifest.peerDependenciesMeta).toEqual(Object.fromEntries(optional.map((name) => [name, { optional: true }])))
    const files = tarball.files.map((file) => file.path)
    expect(files).toEqual(expect.arrayContaining(["package.json", "README.md", "LICENSE", "bin/agent-loop.js", "dist/index.js", "dist/index.d.ts", "dist/cli/main.js", "examples/demo.cassette.jsonl", "docs/concepts.md"]))
    expect(files.filter((file) => /(^|\/)(test|bench|\.ci)\/|\.test\.|tsconfig|scripts\//.test(file))).toEqual([])
    // No declaration may point at a `.ts` file: users compile without `allowImportingTsExtensions`.
    const declarations = files.filter((file) => file.endsWith(".d.ts"))
    const tsSpecifiers = declarations.filter((file) => /(from|import)\s*\(?\s*["']\.\.?\/[^"']*\.ts["']/.test(fs.readFileSync(path.join(installed(app), file), "utf8")))
    expect(tsSpecifiers).toEqual([])
    console.log(`npm pack: ${tarball.filename}, ${(tarball.size / 1024).toFixed(0)} kB, ${files.length} files`)
  })

  it("(a) plain Node imports it and runs a turn with the Scripted provider", async () => {
    fs.writeFileSync(path.join(app, "plain.mjs"), plainConsumer)
    const result = succeeded(await run(process.execPath, ["plain.mjs"], app))
    const output = JSON.parse(result.stdout)
    expect(output).toEqual({ status: "completed", answer: "Hello from the package.", from: expect.stringContaining("/node_modules/effect-agent-loop/dist/index.js") })
  })

  it("(a) the Vertex provider loads google-auth-library only when called, and says to install it when it is missing", async () => {
    fs.writeFileSync(path.join(app, "vertex.mjs"), vertexConsumer)
    const result = succeeded(await run(process.execPath, ["vertex.mjs"], app))
    expect(JSON.parse(result.stdout)).toEqual({
      tag: "ProviderRejected",
      message: expect.stringContaining("needs the google-auth-library package for Application Default Credentials: npm install google-auth-library")
    })
  })

  it("(e) CommonJS: require() of the package and of its testing kit runs a turn", async () => {
    fs.writeFileSync(path.join(app, "required.cjs"), requireConsumer)
    const result = succeeded(await run(process.execPath, ["required.cjs"], app))
    expect(JSON.parse(result.stdout)).toEqual({
      status: "completed",
      answer: "Hello from require.",
      testing: "function",
      from: expect.stringContaining("/node_modules/effect-agent-loop/dist/index.js")
    })
    expect(result.stderr).toBe("")
    const manifest = JSON.parse(fs.readFileSync(path.join(installed(app), "package.json"), "utf8"))
    expect(manifest.sideEffects).toEqual(["./bin/agent-loop.js", "./dist/cli/main.js", "./src/cli/main.ts"])
  })

  it("(f) an esbuild --bundle --platform=node ESM build of an app on OpenAiCompatible and NodeHttpClient runs, with the documented banner", async (context) => {
    const server = await start([{ text: "bundled answer" }])
    context.onTestFinished(() => server.close())
    fs.writeFileSync(path.join(app, "bundled.mjs"), bundledConsumer)
    const esbuild = await import("esbuild")
    const build = (outfile: string, banner: boolean) =>
      esbuild.build({
        entryPoints: [path.join(app, "bundled.mjs")],
        absWorkingDir: app,
        bundle: true,
        platform: "node",
        format: "esm",
        outfile: path.join(app, outfile),
        logLevel: "silent",
        ...(banner ? { banner: { js: ESM_REQUIRE_BANNER } } : {})
      })
    await build("bundle.mjs", true)
    const result = succeeded(await run(process.execPath, ["bundle.mjs", server.url], app))
    expect(JSON.parse(result.stdout)).toEqual({ status: "completed", answer: "bundled answer" })
    expect(server.requests[0]!.headers.authorization).toBe("Bearer bundle-key")
    // why the banner: without it, undici's require of a built-in fails in the ESM bundle
    await build("bare.mjs", false)
    const bare = await run(process.execPath, ["bare.mjs", server.url], app)
    expect(bare.code).not.toBe(0)
    expect(bare.stderr).toContain('Dynamic require of "node:')
  })

  it("(b) a TypeScript app compiled by tsc with ordinary settings type-checks and runs", async () => {
    const dir = path.join(app, "typed")
    fs.mkdirSync(dir)
    fs.writeFileSync(path.join(dir, "consumer.ts"), typedConsumer)
    fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify(typedTsconfig))
    fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module" }))
    const tsc = path.join(root, "node_modules", "typescript", "bin", "tsc")
    succeeded(await run(process.execPath, [tsc, "-p", "tsconfig.json"], dir))
    const result = succeeded(await run(process.execPath, [path.join("out", "consumer.js")], dir))
    expect(JSON.parse(result.stdout)).toEqual({
      status: "completed",
      wrong: "done",
      answer: "5",
      tool: "5"
    })
  })

  it("(d) every TypeScript example of the README, the docs and the doc comments type-checks against it", async () => {
    const dir = path.join(app, "doc-examples")
    fs.mkdirSync(dir)
    const examples = documentedExamples()
    for (const [file, code] of examples) fs.writeFileSync(path.join(dir, file), code)
    fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module" }))
    fs.writeFileSync(
      path.join(dir, "tsconfig.json"),
      JSON.stringify({
        // Each example is a module of its own; its unused names are fine, its wrong ones are not.
        compilerOptions: { module: "nodenext", target: "esnext", types: ["node"], strict: true, noEmit: true, skipLibCheck: true, moduleDetection: "force" },
        include: ["*.ts"]
      })
    )
    expect(examples.size).toBeGreaterThan(20)
    succeeded(await run(process.execPath, [path.join(root, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"], dir))
  })

  /** The installed command, as npm linked it. */
  const bin = () => path.join(app, "node_modules", ".bin", "agent-loop")

  it("(c) the agent-loop command answers --help", async () => {
    const result = succeeded(await run(bin(), ["--help"], app, isolatedEnv(tempDir())))
    expect(result.stdout).toContain("agent-loop <subcommand>")
    expect(result.stdout).toMatch(/\brun\b/)
  })

  it("(c) help, version and the model list come from the built pages without loading the CLI, exactly as the CLI prints them", async () => {
    const env = isolatedEnv(tempDir())
    const main = path.join(installed(app), "dist", "cli", "main.js")
    for (const args of [["--help"], ["run", "--help"], ["sessions", "list", "-h"], ["mcp", "add", "--help"], ["--version"], ["models"], ["models", "--provider", "anthropic"]]) {
      for (const colour of [{}, { FORCE_COLOR: "1" }]) {
        const quick = succeeded(await run(bin(), args, app, { ...env, ...colour }))
        const full = succeeded(await run(process.execPath, [main, ...args], app, { ...env, ...colour }))
        expect(quick.stdout, args.join(" ")).toBe(full.stdout)
        expect(quick.stderr, args.join(" ")).toBe(full.stderr)
      }
      // the quick answer loads neither Effect nor the CLI's command tree (Node's module log names every file it loads)
      const loaded = succeeded(await run(bin(), args, app, { ...env, NODE_DEBUG: "esm" })).stderr
      expect(loaded, args.join(" ")).toContain("quick.js")
      expect(loaded, args.join(" ")).not.toMatch(/cli[/\\]commands\.js|[/\\]effect[/\\]dist[/\\]/)
    }
    expect(tarball.files.map((file) => file.path)).toContain("dist/cli/help.json")
  })

  /** The demo's own command line, pointed at the installed copies of its files. */
  const demoArgs = (): Array<string> =>
    (packageJson.scripts.demo as string)
      .replace(/^node src\/cli\/main\.ts /, "")
      .replaceAll("examples/", "node_modules/effect-agent-loop/examples/")
      .match(/"[^"]*"|\S+/g)!
      .map((arg) => arg.replace(/^"(.*)"$/, "$1"))

  it("(c) the agent-loop command replays the demo cassette offline", async () => {
    const args = demoArgs()
    const env = { ...isolatedEnv(tempDir()), HTTP_PROXY: "http://127.0.0.1:9", HTTPS_PROXY: "http://127.0.0.1:9" }
    const result = succeeded(await run(bin(), args, app, env))
    expect(result.stdout).toContain("The project is **Lighthouse**.")
    expect(result.stderr).toMatch(/── completed · 3 iterations · /)
  })

  it("(c) the agent-loop command saves sessions in SQLite (node:sqlite, no package), and reaches for Postgres with --store postgres", async () => {
    const home = tempDir()
    const empty = succeeded(await run(bin(), ["sessions", "list"], app, isolatedEnv(home)))
    expect(empty.stderr).toBe(`no sessions yet in ${path.join(home, "data", "sessions.db")}\n`)
    const saved = [...demoArgs().filter((arg) => arg !== "--ephemeral"), "--session", "kept"]
    succeeded(await run(bin(), saved, app, isolatedEnv(home)))
    const listed = succeeded(
      await run(bin(), ["sessions", "list", "--workspace", "node_modules/effect-agent-loop/examples/demo-workspace"], app, isolatedEnv(home))
    )
    expect(listed.stdout).toMatch(/^\* kept  .*  6 messages  What is in this workspace, and what is the project about\?\n$/)
    // nothing listens on port 9: the installed package loaded the app's @effect/sql-pg and tried to connect
    const postgres = await run(bin(), ["sessions", "list", "--store", "postgres", "--database-url", "postgres://u:secret-pw@127.0.0.1:9/db"], app, isolatedEnv(home))
    expect(postgres).toMatchObject({ code: 1, stdout: "" })
    // a hint first: the password was on the command line
    expect(postgres.stderr).toMatch(
      /^agent-loop: --database-url holds a password, .* use AGENT_LOOP_DATABASE_URL or --database-url-file FILE\nagent-loop: cannot open the session store \(postgres 127\.0\.0\.1:9\/db\): .+\n$/
    )
    expect(postgres.stderr).not.toContain("secret-pw")
  })

  it("(c) --provider bedrock without AWS's optional packages fails with one line saying what to install, sending nothing", async () => {
    const env = { ...isolatedEnv(tempDir()), AWS_REGION: "us-east-1", AWS_ACCESS_KEY_ID: "AKIDPACKAGING0001", AWS_SECRET_ACCESS_KEY: "packaging-secret-key-0123" }
    const args = ["run", "--provider", "bedrock", "--base-url", "http://127.0.0.1:9", "--model", "amazon.nova-lite-v1:0", "--ephemeral", "hi"]
    const result = await run(bin(), args, app, env)
    expect(result.code).toBe(1)
    expect(result.stderr.trimEnd().split("\n").at(-1)).toMatch(
      /^agent-loop: ProviderRejected: Bedrock needs AWS's packages, which are optional: npm install @smithy\/signature-v4 @aws-crypto\/sha256-js @aws-sdk\/credential-providers @smithy\/eventstream-codec \(/
    )
    expect(result.stderr).not.toContain("packaging-secret-key-0123")
  })

  /** A Node older than the package needs, on PATH outside any node_modules (the machine's own). */
  const olderNode = (process.env.PATH ?? "").split(path.delimiter)
    .filter((dir) => dir !== "" && !dir.split(path.sep).includes("node_modules"))
    .map((dir) => path.join(dir, "node"))
    .find((file) => {
      const version = /^v(\d+)\.(\d+)\./.exec(spawnSync(file, ["--version"], { encoding: "utf8" }).stdout ?? "")
      return version !== null && (Number(version[1]) < 22 || (Number(version[1]) === 22 && Number(version[2]) < 19))
    })

  it.skipIf(olderNode === undefined)(
    olderNode === undefined
      ? "the command on a too old Node: SKIPPED, no Node older than 22.19 on PATH"
      : "the command on a too old Node says which Node it needs, in one line, and exits 1",
    async () => {
      const result = await run(olderNode!, [bin(), "run", "--help"], app, isolatedEnv(tempDir()))
      const version = spawnSync(olderNode!, ["-p", "process.versions.node"], { encoding: "utf8" }).stdout.trim()
      const minimum = /\d+\.\d+\.\d+/.exec(packageJson.engines.node)![0]
      expect(result).toEqual({ code: 1, stdout: "", stderr: `agent-loop needs Node ${minimum} or newer (this is Node ${version})\n` })
    }
  )
})
