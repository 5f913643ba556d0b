/**
 * Lines typed on stdin. A question (the approval prompt) takes the next line; every other line is
 * input for the command. The terminal stays in its normal (cooked) mode, so it echoes and edits
 * lines itself and Ctrl-C arrives as SIGINT (see `ctrlC.ts`).
 */
import * as readline from "node:readline"
import { type Cause, Deferred, Effect, Exit, Option, Queue, type Scope } from "effect"

/** Lines from stdin. */
export interface LineInput {
  /** The next line that is not an answer; `None` once stdin has ended. */
  readonly next: Effect.Effect<Option.Option<string>>
  /** Asks for one line: the next line typed, or `undefined` if stdin ends or the question is cancelled first. */
  readonly ask: Effect.Effect<string | undefined>
  /**
   * Answers every open question with `undefined` (no answer, which the approval prompt takes as
   * no), so that Ctrl-C does not leave a prompt waiting for a `y` that would still be obeyed.
   */
  readonly cancelQuestions: Effect.Effect<void>
}

/**
 * Reads `input` line by line until the scope closes. With `continuation` (a terminal), a line that
 * ends with a backslash continues on the next: the lines are one input, joined by newlines, as in a
 * shell. Answers to questions are single lines.
 */
export const fromReadable = (
  input: NodeJS.ReadableStream,
  options: { readonly continuation?: boolean } = {}
): Effect.Effect<LineInput, never, Scope.Scope> =>
  Effect.gen(function*() {
    const lines = yield* Queue.unbounded<string, Cause.Done>()
    const questions: Array<Deferred.Deferred<string | undefined>> = []
    let closed = false
    const answerAll = (answer: string | undefined) => {
      for (const question of questions.splice(0)) Deferred.doneUnsafe(question, Exit.succeed(answer))
    }
    const rl = yield* Effect.acquireRelease(
      Effect.sync(() => readline.createInterface({ input, terminal: false })),
      (rl) => Effect.sync(() => rl.close())
    )
    // the lines so far of an input continued with trailing backslashes
    let continued: Array<string> = []
    rl.on("line", (line) => {
      const question = questions.shift()
      if (question) return Deferred.doneUnsafe(question, Exit.succeed(line))
      if (options.continuation === true && line.endsWith("\\")) {
        continued.push(line.slice(0, -1))
        return
      }
      const whole = [...continued, line].join("\n")
      continued = []
      Queue.offerUnsafe(lines, whole)
    })
    rl.once("close", () => {
      // input that ends mid-continuation is still input
      if (continued.length > 0) Queue.offerUnsafe(lines, continued.join("\n"))
      closed = true
      answerAll(undefined)
      Queue.endUnsafe(lines)
    })
    const ask = Effect.suspend(() => {
      if (closed) return Effect.succeed(undefined)
      const question = Deferred.makeUnsafe<string | undefined>()
      questions.push(question)
      return Deferred.await(question).pipe(
        Effect.onInterrupt(() =>
          Effect.sync(() => {
            const at = questions.indexOf(question)
            if (at >= 0) questions.splice(at, 1)
          })
        )
      )
    })
    return {
      next: Queue.take(lines).pipe(Effect.map(Option.some), Effect.catch(() => Effect.succeed(Option.none<string>()))),
      ask,
      cancelQuestions: Effect.sync(() => answerAll(undefined))
    }
  })

/** Reads stdin line by line until the scope closes. */
export const make: Effect.Effect<LineInput, never, Scope.Scope> = Effect.suspend(() =>
  fromReadable(process.stdin, { continuation: process.stdin.isTTY === true })
)
