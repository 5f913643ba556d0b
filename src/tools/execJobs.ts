/**
 * `exec_output` and `exec_kill`: the model's side of the background commands `exec` starts with
 * `background: true` (`backgroundJobs.ts`). They come with `exec` in `builtinTools`. Reading a
 * job's output runs nothing and stopping a job only ends what the user approved, so neither asks.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Tool from "../domain/Tool.ts"
import { BackgroundJobs, describeState, type JobOutput } from "./backgroundJobs.ts"

/** The longest `wait_ms` of `exec_output`. */
export const MAX_OUTPUT_WAIT_MS = 60_000

const JobId = Schema.String.annotate({ description: "The job id exec returned" })

/** A read as the model sees it: the state, what was dropped, then the new output. */
const shown = (id: string, read: JobOutput): string => {
  const head = `job ${id}: ${describeState(read.state)}`
  const dropped = read.dropped > 0 ? `\n[${read.dropped} earlier bytes dropped: the job keeps its newest output only]` : ""
  return `${head}${dropped}\n${read.output === "" ? "(no new output)" : read.output}`
}

/** `exec_output`: a background job's new output and state. */
export const execOutput = Tool.make({
  name: "exec_output",
  description: "Reads the output a background job (exec with background: true) printed since the last read, and whether it " +
    `is still running. wait_ms (at most ${MAX_OUTPUT_WAIT_MS}) first waits that long for new output or the job's end.`,
  parameters: Schema.Struct({
    id: JobId,
    wait_ms: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)).annotate({ description: "How long to wait for new output, in milliseconds" }))
  }),
  readOnly: true,
  execute: ({ id, wait_ms }, context) =>
    Effect.gen(function*() {
      const wait = wait_ms === undefined || wait_ms === 0 ? undefined : Duration.millis(Math.min(wait_ms, MAX_OUTPUT_WAIT_MS))
      return shown(id, yield* (yield* BackgroundJobs).read(context.sessionKey, id, wait))
    })
})

/** `exec_kill`: stops a background job and everything it started. */
export const execKill = Tool.make({
  name: "exec_kill",
  description: "Stops a background job (exec with background: true) with everything it started, and returns its last output.",
  parameters: Schema.Struct({ id: JobId }),
  execute: ({ id }, context) =>
    Effect.gen(function*() {
      return shown(id, yield* (yield* BackgroundJobs).kill(context.sessionKey, id))
    })
})
