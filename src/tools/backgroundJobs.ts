/**
 * Background commands: `exec` with `background: true` starts a command and answers at once with
 * its job id; `exec_output` reads what it printed since the last read (waiting a little for more
 * if asked), and `exec_kill` stops it.
 *
 * The jobs belong to a table that the tool registry owns (`ToolRegistryLive.layer`): when the
 * registry goes (the loop's layer closes: the CLI session ends, the application stops) every job
 * still running is killed with everything it started. A session sees only its own jobs, holds at
 * most `MAX_JOBS` at once, and each job keeps the last `MAX_OUTPUT_BYTES` of its output (older
 * bytes are dropped, and the next read says how many); of the jobs that ended, the table keeps the
 * newest, up to `MAX_KEPT_JOBS` a session.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Scope from "effect/Scope"
import { ToolError } from "../domain/errors.ts"

/** Jobs one session may have running at once. */
export const MAX_JOBS = 8
/** Bytes of output a job keeps between reads. */
export const MAX_OUTPUT_BYTES = 256 * 1024
/** Jobs one session's table keeps, running or ended: past it, the oldest ended job is forgotten. */
export const MAX_KEPT_JOBS = 32

/** What became of a job. */
export type JobState =
  | { readonly _tag: "Running" }
  | { readonly _tag: "Exited"; readonly code: number }
  | { readonly _tag: "Failed"; readonly message: string }
  | { readonly _tag: "Killed" }

/** A job as listed (`/jobs`). */
export interface JobInfo {
  readonly id: string
  readonly command: string
  readonly startedAt: number
  readonly state: JobState
}

/** What a read returns: the output since the last read, how much was dropped before it, and the state. */
export interface JobOutput {
  readonly output: string
  readonly dropped: number
  readonly state: JobState
}

/** Runs a job's command to its exit code, feeding `onOutput`; interrupting it kills the command. */
export type JobRun = (onOutput: (chunk: Uint8Array) => void) => Effect.Effect<number, ToolError>

/** The table of background jobs. */
export interface BackgroundJobsShape {
  readonly start: (sessionKey: string, command: string, run: JobRun) => Effect.Effect<JobInfo, ToolError>
  /** The output since the last read; with `wait`, first waits up to that long for output or the end. */
  readonly read: (sessionKey: string, id: string, wait?: Duration.Duration) => Effect.Effect<JobOutput, ToolError>
  readonly kill: (sessionKey: string, id: string) => Effect.Effect<JobOutput, ToolError>
  readonly list: (sessionKey: string) => Effect.Effect<ReadonlyArray<JobInfo>>
}

interface Job {
  readonly id: string
  readonly sessionKey: string
  readonly command: string
  readonly startedAt: number
  state: JobState
  chunks: Array<Uint8Array>
  bytes: number
  dropped: number
  /** Decodes across reads, so a character split between two chunks is not broken. */
  readonly decoder: InstanceType<typeof globalThis.TextDecoder>
  /** Completed at the next output or the job's end: what a waiting read waits on. */
  changed: Deferred.Deferred<void>
  fiber?: Fiber.Fiber<void>
}

const unavailable = Effect.fail(new ToolError({ message: "Background commands are not available here (no job table: the tool registry provides one)." }))

/**
 * The job table of the context. The default has none (every call fails saying so);
 * `ToolRegistryLive.layer` provides one that lives as long as the registry.
 */
export const BackgroundJobs = Context.Reference<BackgroundJobsShape>("effect-agent-loop/BackgroundJobs", {
  defaultValue: () => ({ start: () => unavailable, read: () => unavailable, kill: () => unavailable, list: () => Effect.succeed([]) })
})

/** A job table whose jobs are killed when `scope` closes. */
export const make = (scope: Scope.Scope): Effect.Effect<BackgroundJobsShape> =>
  Effect.gen(function*() {
    const jobs = new Map<string, Job>()
    let next = 1
    const clock = yield* Clock.Clock

    const changed = (job: Job) => {
      const done = job.changed
      job.changed = Deferred.makeUnsafe<void>()
      Deferred.doneUnsafe(done, Effect.void)
    }
    const add = (job: Job, chunk: Uint8Array) => {
      job.chunks.push(chunk)
      job.bytes += chunk.length
      // keep the newest bytes: drop whole chunks, then the front of the oldest one kept
      while (job.bytes > MAX_OUTPUT_BYTES) {
        const first = job.chunks[0]!
        const over = job.bytes - MAX_OUTPUT_BYTES
        if (first.length <= over) {
          job.chunks.shift()
          job.bytes -= first.length
          job.dropped += first.length
        } else {
          job.chunks[0] = first.subarray(over)
          job.bytes -= over
          job.dropped += over
        }
      }
      changed(job)
    }
    const take = (job: Job): JobOutput => {
      const out = job.decoder.decode(Buffer.concat(job.chunks), { stream: job.state._tag === "Running" })
      const read = { output: out, dropped: job.dropped, state: job.state }
      job.chunks = []
      job.bytes = 0
      job.dropped = 0
      return read
    }
    const find = (sessionKey: string, id: string) =>
      Effect.suspend(() => {
        const job = jobs.get(id)
        return job === undefined || job.sessionKey !== sessionKey
          ? Effect.fail(new ToolError({ message: `No background job "${id}" in this session (exec with background: true starts one).` }))
          : Effect.succeed(job)
      })
    const info = (job: Job): JobInfo => ({ id: job.id, command: job.command, startedAt: job.startedAt, state: job.state })
    const settle = (job: Job, state: JobState) => {
      if (job.state._tag === "Running") job.state = state
      changed(job)
    }

    return {
      start: (sessionKey, command, run) =>
        Effect.gen(function*() {
          const running = [...jobs.values()].filter((job) => job.sessionKey === sessionKey && job.state._tag === "Running").length
          if (running >= MAX_JOBS) {
            return yield* Effect.fail(new ToolError({ message: `This session already runs ${MAX_JOBS} background jobs: read or kill one first (exec_kill).` }))
          }
          const job: Job = {
            id: `job-${next++}`,
            sessionKey,
            command,
            startedAt: clock.currentTimeMillisUnsafe(),
            state: { _tag: "Running" },
            chunks: [],
            bytes: 0,
            dropped: 0,
            decoder: new TextDecoder("utf-8", { fatal: false }),
            changed: Deferred.makeUnsafe<void>()
          }
          jobs.set(job.id, job)
          // the table stays bounded: the session's oldest ended jobs go first (Map keeps start order)
          const kept = [...jobs.values()].filter((j) => j.sessionKey === sessionKey)
          let excess = kept.length - MAX_KEPT_JOBS
          for (const old of kept) {
            if (excess <= 0) break
            if (old.state._tag === "Running") continue
            jobs.delete(old.id)
            excess--
          }
          job.fiber = yield* run((chunk) => add(job, chunk)).pipe(
            Effect.matchEffect({
              onSuccess: (code) => Effect.sync(() => settle(job, { _tag: "Exited", code })),
              onFailure: (e) => Effect.sync(() => settle(job, { _tag: "Failed", message: e.message }))
            }),
            Effect.onInterrupt(() => Effect.sync(() => settle(job, { _tag: "Killed" }))),
            Effect.forkIn(scope)
          )
          return info(job)
        }),
      read: (sessionKey, id, wait) =>
        Effect.flatMap(find(sessionKey, id), (job) =>
          wait === undefined || job.bytes > 0 || job.state._tag !== "Running"
            ? Effect.sync(() => take(job))
            : Deferred.await(job.changed).pipe(Effect.timeoutOption(wait), Effect.andThen(Effect.sync(() => take(job))))),
      kill: (sessionKey, id) =>
        Effect.flatMap(find(sessionKey, id), (job) =>
          Effect.andThen(job.fiber === undefined ? Effect.void : Fiber.interrupt(job.fiber), Effect.sync(() => take(job)))),
      list: (sessionKey) => Effect.sync(() => [...jobs.values()].filter((job) => job.sessionKey === sessionKey).map(info))
    }
  })

/** A job's state in words, for the model and `/jobs`. */
export const describeState = (state: JobState): string => {
  switch (state._tag) {
    case "Running":
      return "running"
    case "Exited":
      return `exited with code ${state.code}`
    case "Failed":
      return `failed: ${state.message}`
    case "Killed":
      return "killed"
  }
}
