/**
 * What the CLI prints for a command line it cannot parse: one line on stderr naming what is
 * wrong, the closest known flag or command when one is near, and how to see the help, never the
 * whole help page (`effect/cli`'s default presenter prints the page with the error at its
 * bottom). Help and version requests print as before.
 */
import * as Console from "effect/Console"
import type * as CliError from "effect/cli/CliError"
import * as CliOutput from "effect/cli/CliOutput"
import type * as HelpDoc from "effect/cli/HelpDoc"
import * as Layer from "effect/Layer"

/** The edit distance of `a` and `b` (insertions, deletions, substitutions), case-insensitive. */
const distance = (a: string, b: string): number => {
  const x = a.toLowerCase()
  const y = b.toLowerCase()
  let previous = Array.from({ length: y.length + 1 }, (_, i) => i)
  for (let i = 1; i <= x.length; i++) {
    const row = [i]
    for (let j = 1; j <= y.length; j++) {
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1))
    }
    previous = row
  }
  return previous[y.length]!
}

/** The candidate nearest `given`, when near enough to be a typo (or one holds the other). */
export const closest = (given: string, candidates: ReadonlyArray<string>): string | undefined => {
  const bare = given.replace(/^-+/, "").split("=")[0]!
  let best: { readonly name: string; readonly score: number } | undefined
  for (const name of candidates) {
    const plain = name.replace(/^-+/, "")
    const score = plain.toLowerCase().startsWith(bare.toLowerCase()) || bare.toLowerCase().startsWith(plain.toLowerCase())
      ? Math.abs(plain.length - bare.length) / 10
      : distance(bare, plain)
    if (best === undefined || score < best.score) best = { name, score }
  }
  return best !== undefined && best.score <= Math.max(2, Math.floor(bare.length / 3)) ? best.name : undefined
}

const flagNames = (doc: HelpDoc.HelpDoc): ReadonlyArray<string> =>
  [...doc.flags, ...(doc.inheritedFlags ?? []), ...(doc.globalFlags ?? [])].flatMap((flag) => [
    `--${flag.name}`,
    ...flag.aliases.map((alias) => (alias.startsWith("-") ? alias : alias.length === 1 ? `-${alias}` : `--${alias}`))
  ])

const commandNames = (doc: HelpDoc.HelpDoc): ReadonlyArray<string> =>
  (doc.subcommands ?? []).flatMap((group) => group.commands.map((command) => command.name))

/** The one line for an invocation's first error. */
export const describeInvocation = (commandPath: ReadonlyArray<string>, doc: HelpDoc.HelpDoc, errors: ReadonlyArray<CliError.CliError>): string => {
  const command = commandPath.join(" ")
  const help = `${command} --help`
  const error = errors[0]
  if (error === undefined) return `agent-loop: cannot read this command line; see ${help}`
  switch (error._tag) {
    case "UnrecognizedOption": {
      const near = closest(error.option, flagNames(doc))
      return `agent-loop: unknown flag ${error.option} for ${command}${near === undefined ? "" : `; did you mean ${near}?`} (${help} lists the flags)`
    }
    case "UnknownSubcommand": {
      const near = closest(error.subcommand, commandNames(doc))
      return `agent-loop: unknown command ${error.subcommand} for ${command}${near === undefined ? "" : `; did you mean ${near}?`} (${help} lists the commands)`
    }
    default:
      return `agent-loop: ${error.message.split("\n").map((line) => line.trim()).filter((line) => line !== "").join(" ")} (see ${help})`
  }
}

/** The presenter: help and version as `effect/cli` prints them, an invalid invocation as one line on stderr. */
export const presenter: CliOutput.Presenter = {
  present: (event) =>
    event._tag === "InvalidInvocation"
      ? Console.error(describeInvocation(event.commandPath, event.helpDoc, event.errors))
      : CliOutput.defaultPresenter.present(event)
}

/** The presenter as a layer, for `main.ts`. */
export const layer: Layer.Layer<never> = CliOutput.layerPresenter(presenter)

