/** Agent files as Claude Code writes them: its tool names, `model: inherit`, and its model aliases resolved for the provider in use. */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import * as Agents from "../../src/cli/config/agents.ts"

const parsed = (text: string) => {
  const result = Agents.parse("/x/reviewer.md", text)
  if (Result.isFailure(result)) throw new Error(result.failure)
  return result.success
}

describe("agent files", () => {
  it("Claude Code's tool names map to ours; inherit is the caller's model; a description may hold a colon", () => {
    const agent = parsed("---\ndescription: Use when: code changed\ntools: Read, Write, Edit, Bash, Grep, Glob, WebFetch\nmodel: inherit\n---\nReview.\n")
    expect(agent.description).toBe("Use when: code changed")
    expect(agent.tools).toEqual(["read_file", "write_file", "edit_file", "exec", "grep", "glob", "web_fetch"])
    expect(agent.model).toBeUndefined()
  })

  it("sonnet, opus and haiku are the newest model of the family the provider's registry lists; other names are kept", () => {
    const anthropic = { name: "anthropic", registry: "anthropic" }
    expect(Agents.resolveModel("sonnet", anthropic)).toEqual(Result.succeed("claude-sonnet-4-6"))
    expect(Agents.resolveModel("opus", anthropic)).toEqual(Result.succeed("claude-opus-4-7"))
    expect(Agents.resolveModel("haiku", anthropic)).toEqual(Result.succeed("claude-haiku-4-5"))
    expect(Agents.resolveModel("sonnet", { name: "bedrock", registry: "bedrock" })).toEqual(Result.succeed("anthropic.claude-sonnet-4-6"))
    expect(Agents.resolveModel("my-model", { name: "openai", registry: "openai" })).toEqual(Result.succeed("my-model"))
  })

  it("an alias the provider has no model for is a problem naming the file, the alias and the provider; the agent is left out", () => {
    const agents = [parsed("---\ndescription: d\nmodel: sonnet\n---\nx"), { ...parsed("---\ndescription: d\n---\nx"), name: "plain", path: "/x/plain.md" }]
    const { agents: kept, problems } = Agents.withModels(agents, { name: "openai", registry: "openai" })
    expect(kept.map((agent) => agent.name)).toEqual(["plain"])
    expect(problems).toEqual([{
      path: "/x/reviewer.md",
      message: "model \"sonnet\" is a Claude Code alias, and provider openai has no sonnet model (agent-loop models --provider openai lists its models)"
    }])
    expect(Agents.withModels(agents, { name: "anthropic", registry: "anthropic" }).agents[0]!.model).toBe("claude-sonnet-4-6")
  })
})
