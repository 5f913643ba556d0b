import { describe, expect, it } from "@effect/vitest"
import type { McpSchema } from "effect/ai"
import { Message } from "effect-agent-loop"
import { capOutput, toToolOutput } from "../../src/layers/mcp/content.ts"

const bytes = (n: number) => new Uint8Array(n).fill(1)
const image = (data: Uint8Array, mimeType = "image/png") => ({ type: "image", data, mimeType }) as McpSchema.ContentBlock
const text = (value: string) => ({ type: "text", text: value }) as McpSchema.ContentBlock
const result = (content: ReadonlyArray<McpSchema.ContentBlock>, isError?: boolean) =>
  ({ content, ...(isError === undefined ? {} : { isError }) }) as McpSchema.CallToolResult

describe("MCP results as content", () => {
  it("images up to the cap are image parts in base64; one over it is its summary with a note; other media are summaries", () => {
    const output = toToolOutput(result([text("two shots"), image(bytes(100)), image(bytes(101)), image(bytes(5), "audio/wav")], true), 100)
    expect(output).toEqual({
      content: [
        Message.text("two shots"),
        Message.image("image/png", Buffer.from(bytes(100)).toString("base64")),
        Message.text("[image image/png, 101 bytes] (over the 100-byte limit for images, not shown)"),
        Message.text("[image audio/wav, 5 bytes]")
      ],
      isError: true
    })
    // nothing showable: the text of before, one string
    expect(toToolOutput(result([text("big"), image(bytes(101))]), 100)).toEqual({
      content: "big\n[image image/png, 101 bytes]"
    })
  })

  it("the text cap is shared by the text parts in order; images are kept and do not count", () => {
    const png = Message.image("image/png", "AAAA")
    const capped = capOutput({ content: [Message.text("é".repeat(10)), png, Message.text("abcdef")] }, 24)
    expect(capped.content).toEqual([
      Message.text("é".repeat(10)),
      png,
      Message.text("abcd"),
      Message.text("[output truncated: showing the first 24 of 26 bytes; 2 bytes were cut. Ask for less (a range, a filter, a page) to see the rest]")
    ])
    const within = { content: [Message.text("x".repeat(24)), png] }
    expect(capOutput(within, 24)).toBe(within)
  })
})
