/**
 * Images from the command line, through the real `agent-loop` bin: `--image FILE` and `@path`
 * mentions reach the model as image parts typed by their bytes; what cannot be sent stops the
 * command with one line before any request.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { imageMentions, sniffImageType } from "../../src/cli/input/images.ts"
import { isolatedEnv, runCli, spawnCli, tempDir, type TestContext } from "../support/cliProcess.ts"
import { type Script, start } from "../support/openaiServer.ts"

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from("png pixels")])
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from("jpeg pixels")])
const GIF = Buffer.from("GIF89a gif pixels")
const WEBP = Buffer.concat([Buffer.from("RIFF"), Buffer.from([0, 0, 0, 0]), Buffer.from("WEBPVP8 webp")])

/** A server, a home holding a workspace with images (one named .png that is a JPEG), and the CLI flags. */
const setup = async (context: TestContext, script: Script = [{ text: "I see it." }], settings?: object) => {
  const server = await start(script)
  context.onTestFinished(() => server.close())
  const home = tempDir()
  const workspace = path.join(home, "ws")
  fs.mkdirSync(path.join(workspace, "shots"), { recursive: true })
  fs.writeFileSync(path.join(workspace, "shots", "real.png"), PNG)
  fs.writeFileSync(path.join(workspace, "shots", "photo.png"), JPEG)
  fs.writeFileSync(path.join(workspace, "anim.gif"), GIF)
  fs.writeFileSync(path.join(workspace, "notes.md"), "# Notes\n")
  fs.writeFileSync(path.join(home, "outside.png"), PNG)
  fs.writeFileSync(path.join(home, "web.webp"), WEBP)
  if (settings !== undefined) {
    fs.mkdirSync(path.join(home, "config", "agent-loop"), { recursive: true })
    fs.writeFileSync(path.join(home, "config", "agent-loop", "settings.json"), JSON.stringify(settings))
  }
  const flags = ["--base-url", server.url, "--workspace", workspace, "--tools", ""]
  return { server, home, workspace, flags, env: isolatedEnv(home) }
}

const dataUrl = (type: string, bytes: Buffer) => `data:${type};base64,${bytes.toString("base64")}`

/** Runs the CLI in `cwd`, expecting it to fail with one line before any request. */
const refused = async (setting: Awaited<ReturnType<typeof setup>>, args: ReadonlyArray<string>) => {
  const result = await runCli(["run", ...setting.flags, ...args], { env: setting.env, cwd: setting.home })
  expect(result.code).toBe(1)
  expect(setting.server.requests).toHaveLength(0)
  const lines = result.stderr.trimEnd().split("\n")
  expect(lines.filter((line) => line.startsWith("agent-loop: ") && !line.includes("note:"))).toHaveLength(1)
  return lines.at(-1)!
}

describe("image mentions and types", () => {
  it("mentions are @ words naming image files, once each, without the sentence's punctuation; mail addresses are not mentions", () => {
    expect(imageMentions("@a.png, @b.JPG. (see @c.jpeg) and @a.png; @d.webp! @e.gif")).toEqual(["a.png", "b.JPG", "c.jpeg", "d.webp", "e.gif"])
    expect(imageMentions("mail me@host.png or @someone about @notes.md and @dir/")).toEqual([])
    expect(imageMentions("@odd.name.png:")).toEqual(["odd.name.png"])
  })

  it("the media type comes from the first bytes, whatever the name", () => {
    expect(sniffImageType(PNG)).toBe("image/png")
    expect(sniffImageType(JPEG)).toBe("image/jpeg")
    expect(sniffImageType(GIF)).toBe("image/gif")
    expect(sniffImageType(Buffer.from("GIF87a..."))).toBe("image/gif")
    expect(sniffImageType(WEBP)).toBe("image/webp")
    expect(sniffImageType(Buffer.from("RIFF\0\0\0\0WAVE"))).toBeUndefined()
    expect(sniffImageType(PNG.subarray(0, 7))).toBeUndefined()
    expect(sniffImageType(Buffer.from("# Notes"))).toBeUndefined()
  })
})

describe.concurrent("agent-loop run with images", () => {
  it("--image and @path mentions reach the model as image_url parts, typed by their bytes; the prompt keeps its text", async (context) => {
    const setting = await setup(context)
    const prompt = "Compare @shots/real.png with @shots/photo.png, then @anim.gif. Mail @someone about @notes.md and @missing.png."
    const result = await runCli(["run", ...setting.flags, "--model", "gpt-4o", "--image", "web.webp", prompt], {
      env: setting.env,
      cwd: setting.home
    })
    expect(result.stderr).not.toContain("agent-loop: ")
    expect(result.code).toBe(0)
    expect(result.stdout).toBe("I see it.\n")
    const user = setting.server.requests[0]!.body.messages.at(-1)
    expect(user).toEqual({
      role: "user",
      content: [
        { type: "text", text: prompt },
        { type: "image_url", image_url: { url: dataUrl("image/webp", WEBP) } },
        { type: "image_url", image_url: { url: dataUrl("image/png", PNG) } },
        { type: "image_url", image_url: { url: dataUrl("image/jpeg", JPEG) } },
        { type: "image_url", image_url: { url: dataUrl("image/gif", GIF) } }
      ]
    })
  })

  it("a model not known to accept images is refused with one line", async (context) => {
    const unknown = await setup(context)
    const line = await refused(unknown, ["--model", "llava", "What is @shots/real.png?"])
    expect(line).toBe(`agent-loop: Model "llava" is not known to accept images; if it does, say so with acceptsImages in the configuration`)
  })

  it("a model the registry says takes no images is refused with one line; the settings' acceptsImages lets a model through", async (context) => {
    const textOnly = await setup(context)
    expect(await refused(textOnly, ["--model", "o3-mini", "--image", "ws/anim.gif", "what?"])).toBe(`agent-loop: Model "o3-mini" does not accept images`)
    const declared = await setup(context, [{ text: "a llama" }], { acceptsImages: { llava: true } })
    const result = await runCli(["run", ...declared.flags, "--model", "llava", "What is @shots/real.png?"], { env: declared.env, cwd: declared.home })
    expect(result.code).toBe(0)
    expect(declared.server.requests[0]!.body.messages.at(-1).content[1].image_url.url).toBe(dataUrl("image/png", PNG))
  })

  it("a missing file or a directory stops the command with one line", async (context) => {
    const setting = await setup(context)
    expect(await refused(setting, ["--model", "gpt-4o", "--image", "nope.png", "hi"])).toBe("agent-loop: cannot read image nope.png: no such file")
    expect(await refused(setting, ["--model", "gpt-4o", "--image", "ws/shots", "hi"])).toBe("agent-loop: cannot read image ws/shots: not a file")
  })

  it("a file that is not an image, or a mention outside the workspace, stops the command with one line", async (context) => {
    const setting = await setup(context)
    expect(await refused(setting, ["--model", "gpt-4o", "--image", "ws/notes.md", "hi"])).toBe("agent-loop: ws/notes.md is not a PNG, JPEG, GIF or WebP image")
    expect(await refused(setting, ["--model", "gpt-4o", "look at @../outside.png"]))
      .toBe("agent-loop: @../outside.png is outside the workspace; attach it with --image")
  })

  it("the settings' maxImageBytes: an image of exactly that size is sent, one byte more stops the command", async (context) => {
    const setting = await setup(context, undefined, { maxImageBytes: PNG.length })
    fs.writeFileSync(path.join(setting.workspace, "big.png"), Buffer.concat([PNG, Buffer.from("!")]))
    expect(await refused(setting, ["--model", "gpt-4o", "see @big.png"]))
      .toBe(`agent-loop: image @big.png is ${PNG.length + 1} bytes, over the limit of ${PNG.length} bytes`)
    const atBound = await runCli(["run", ...setting.flags, "--model", "gpt-4o", "see @shots/real.png"], { env: setting.env, cwd: setting.home })
    expect(atBound.code).toBe(0)
    expect(setting.server.requests[0]!.body.messages.at(-1).content[1].image_url.url).toBe(dataUrl("image/png", PNG))
  })

  it("chat: a line's mentions go with its turn; a line whose image cannot be sent is said why and skipped", async (context) => {
    const setting = await setup(context, [{ text: "First." }, { text: "Third." }])
    const cli = spawnCli(["chat", ...setting.flags, "--model", "gpt-4o"], { env: setting.env, cwd: setting.home, stdin: true })
    cli.child.stdin!.end("what is @shots/real.png?\nand @../outside.png?\nthanks\n")
    const { code } = await cli.exited
    expect(code).toBe(0)
    expect(cli.stdout()).toBe("First.\nThird.\n")
    expect(cli.stderr()).toContain("✗ @../outside.png is outside the workspace; attach it with --image")
    expect(setting.server.requests).toHaveLength(2)
    expect(setting.server.requests[0]!.body.messages.at(-1).content).toEqual([
      { type: "text", text: "what is @shots/real.png?" },
      { type: "image_url", image_url: { url: dataUrl("image/png", PNG) } }
    ])
    expect(setting.server.requests[1]!.body.messages.at(-1)).toEqual({ role: "user", content: "thanks" })
  })

  it("an image turn is saved: sessions show gives its text view", async (context) => {
    const setting = await setup(context)
    const run = await runCli(["run", ...setting.flags, "--model", "gpt-4o", "--session", "pics", "What is @shots/real.png?"], {
      env: setting.env,
      cwd: setting.home
    })
    expect(run.code).toBe(0)
    const shown = await runCli(["sessions", "show", "pics"], { env: setting.env, cwd: setting.home })
    expect(shown.code).toBe(0)
    expect(shown.stdout).toContain(`What is @shots/real.png?\n[image image/png, ${PNG.length} bytes]`)
  })
})
