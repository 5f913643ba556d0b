/**
 * The CLI's help pages as data, written at build time (`npm run build`) into `dist/cli/help.json`
 * so that the installed command answers `--help` and `--version` without loading `effect/cli`
 * (`quick.ts`). Each page is what `effect/cli` itself prints for that command path, taken from its
 * own run of the command tree with a presenter that keeps the page instead of printing it, in the
 * two forms it prints (plain, and with colours for a terminal).
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Effect from "effect/Effect"
import * as CliOutput from "effect/cli/CliOutput"
import * as Command from "effect/cli/Command"
import type * as HelpDoc from "effect/cli/HelpDoc"

/** One page, as `effect/cli` prints it without and with colours. */
export interface HelpPage {
  readonly plain: string
  readonly color: string
}

/** What `quick.ts` reads: the help page of every command path (joined by spaces; `""` is the root, aliases included), and the version line. */
export interface HelpPages {
  readonly version: string
  readonly pages: Readonly<Record<string, HelpPage>>
  readonly versionLine: HelpPage
}

/** Every command path below `command`, its aliases too: `[]`, `["run"]`, `["sessions", "list"]`, … */
export const commandPaths = (command: Command.Command.Any): ReadonlyArray<ReadonlyArray<string>> => [
  [],
  ...command.subcommands.flatMap((group) =>
    group.commands.flatMap((sub) =>
      [sub.name, ...(sub.alias === undefined ? [] : [sub.alias])].flatMap((name) => commandPaths(sub).map((rest) => [name, ...rest]))
    )
  )
]

const both = (render: (formatter: CliOutput.Formatter) => string): HelpPage => ({
  plain: render(CliOutput.defaultFormatter({ colors: false })),
  color: render(CliOutput.defaultFormatter({ colors: true }))
})

/** The help document `effect/cli` presents for `path --help`. */
const helpDocOf = <Name extends string, R>(command: Command.Command<Name, any, any, any, R>, version: string, path: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    let doc: HelpDoc.HelpDoc | undefined
    const presenter: CliOutput.Presenter = {
      present: (event) =>
        Effect.sync(() => {
          if (event._tag === "Help") doc = event.helpDoc
        })
    }
    yield* Command.runWith(command, { version })([...path, "--help"]).pipe(Effect.provide(CliOutput.layerPresenter(presenter)))
    if (doc === undefined) return yield* Effect.die(new Error(`no help page for "${path.join(" ")}"`))
    return doc
  })

/**
 * The help pages of `command` and its version line. `--help` runs no handler, but the command's
 * type still asks for what its handlers need.
 */
export const helpPages = <Name extends string, R>(
  command: Command.Command<Name, any, any, any, R>,
  version: string
): Effect.Effect<HelpPages, never, Exclude<R, Command.Environment>> =>
  Effect.gen(function*() {
    const pages: Record<string, HelpPage> = {}
    for (const path of commandPaths(command)) {
      const doc = yield* helpDocOf(command, version, path)
      pages[path.join(" ")] = both((formatter) => formatter.formatHelpDoc(doc))
    }
    return { version, pages, versionLine: both((formatter) => formatter.formatVersion(command.name, version)) }
  }).pipe(Effect.provide(NodeServices.layer), Effect.orDie)
