/**
 * The session runner on its own (`programs/internal/sessionRunner.ts`, `sessionState.ts`): the
 * state transitions as a pure function, drains on a line of their own, and a runner over a fake
 * loop whose turns take 100 ms of the TestClock and end with the follow-ups queued on them.
 */
import { describe, expect, it } from "@effect/vitest"
import { type Clock, Duration, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import type { TurnResult } from "../../src/domain/Turn.ts"
import * as Usage from "../../src/domain/Usage.ts"
import * as SessionRunner from "../../src/programs/internal/sessionRunner.ts"
import { type Event, type State, transition } from "../../src/programs/internal/sessionState.ts"
import * as RunningTurn from "../../src/programs/internal/runningTurn.ts"
import type { EventBusShape } from "../../src/services/EventBus.ts"

const silentBus = { publishUnsafe: () => {} } as unknown as EventBusShape
const stillClock = { currentTimeMillisUnsafe: () => 0 } as unknown as Clock.Clock

let ids = 0
const makeTurn = (sessionKey: string, clock: Clock.Clock): RunningTurn.RunningTurn =>
  RunningTurn.make({
    turnId: `t${++ids}`,
    model: "m",
    sessionKey,
    depth: 0,
    parentTurnId: undefined,
    startedAt: clock.currentTimeMillisUnsafe(),
    steeringCapacity: 2,
    pendingCapacity: 2,
    bus: silentBus,
    clock
  })

const resultOf = (turn: RunningTurn.RunningTurn, followUps: ReadonlyArray<string> = turn.followUps): TurnResult => ({
  turnId: turn.turnId,
  sessionKey: turn.sessionKey,
  status: "completed",
  messages: [],
  followUps: [...followUps],
  iterations: 1,
  usage: Usage.empty
})

/** Applies events one after the other, keeping each step's action. */
const run = (events: ReadonlyArray<Event>, from?: State) => {
  let state = from
  const actions = events.map((event) => {
    const [next, action] = transition(state, event)
    state = next
    return action
  })
  return { state, actions: actions.map((a) => a._tag) }
}

describe("sessionState.transition", () => {
  const early = () => undefined

  it("a hold makes the session Running; the last holder leaving makes it Idle; the idle time ends it", () => {
    const held = run([{ _tag: "Hold" }, { _tag: "Hold" }, { _tag: "Leave" }])
    expect(held.state).toMatchObject({ _tag: "Running", holders: 1, started: false })
    const idle = run([{ _tag: "Leave" }], held.state)
    expect(idle.state).toEqual({ _tag: "Idle", started: false })
    const [releasing, end] = transition(idle.state, { _tag: "Expire", idle: idle.state as never })
    expect(releasing).toMatchObject({ _tag: "Releasing" })
    expect(end).toEqual({ _tag: "End", started: false, releasing })
    // a turn or a message meanwhile waits for the end
    expect(run([{ _tag: "Hold" }, { _tag: "Route", message: { text: "a" }, early: () => undefined }], releasing).actions).toEqual(["Wait", "Wait"])
    expect(transition(releasing, { _tag: "Released", releasing: releasing as never })[0]).toBeUndefined()
  })

  it("a timer armed for an earlier Idle does nothing once the session was used again", () => {
    const idle = run([{ _tag: "Hold" }, { _tag: "Leave" }]).state
    const again = run([{ _tag: "Hold" }, { _tag: "Leave" }], idle).state
    expect(again).toEqual(idle)
    expect(transition(again, { _tag: "Expire", idle: idle as never })).toEqual([again, { _tag: "Nothing" }])
  })

  it("a routed message starts a drain, waits behind it while no turn is open, and steers the open turn", () => {
    const clock = stillClock
    const first = makeTurn("s", clock)
    const started = run([{ _tag: "Route", message: { text: "a" }, early: () => first }])
    expect(started.actions).toEqual(["Run"])
    expect(run([{ _tag: "Route", message: { text: "b" }, early }], started.state).actions).toEqual(["Steer"])
    const begun = run([{ _tag: "Begin", turn: first }, { _tag: "End", turn: first }, { _tag: "Route", message: { text: "b" }, early }], started.state)
    expect(begun.actions).toEqual(["Begun", "Nothing", "Queued"])
    expect(begun.state).toMatchObject({ _tag: "Running", started: true, active: undefined, drain: { backlog: [{ text: "b" }] } })
  })

  it("a drain's next turn is its follow-ups first, then what waited; once none is left it lets go of the session", () => {
    const started = run([{ _tag: "Route", message: { text: "a" }, early }, { _tag: "Route", message: { text: "b" }, early }])
    const [next, action] = transition(started.state, { _tag: "Next", followUps: ["f1", "f2"], early })
    expect(action).toMatchObject({ _tag: "Run", step: { message: { text: "f1" }, index: 1, waiting: [{ text: "f2" }, { text: "b" }] } })
    const rest = run([{ _tag: "Next", followUps: [], early }, { _tag: "Next", followUps: [], early }, { _tag: "Next", followUps: [], early }], next)
    expect(rest.actions).toEqual(["Run", "Run", "Nothing"])
    expect(rest.state).toEqual({ _tag: "Idle", started: false })
  })

  it("a drain stopped before its end drops what waited", () => {
    const started = run([{ _tag: "Route", message: { text: "a" }, early }, { _tag: "Route", message: { text: "b" }, early }])
    expect(run([{ _tag: "Stop" }], started.state).state).toEqual({ _tag: "Idle", started: false })
  })
})

describe("drain on a line of its own", () => {
  it.effect("a turn, then its follow-ups in order, then what was offered while it ran", () =>
    Effect.gen(function*() {
      const line = SessionRunner.makeLine()
      const ran: Array<string> = []
      const each = (step: SessionRunner.Step) =>
        Effect.gen(function*() {
          ran.push(step.message.text)
          yield* Effect.sleep("100 millis")
          return { ...resultOf(makeTurn("s", stillClock)), followUps: step.message.text === "a" ? ["f1", "f2"] : [] }
        })
      const first = line.offer({ text: "a" })!
      const fiber = yield* Effect.forkChild(SessionRunner.drain(first, line, each))
      yield* TestClock.adjust("50 millis")
      expect(line.offer({ text: "b" })).toBeUndefined()
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(fiber)
      expect(ran).toEqual(["a", "f1", "f2", "b"])
      expect(line.busy()).toBe(false)
    }))

  it.effect("interrupted while follow-ups are queued: they are dropped, and the next message starts a new drain", () =>
    Effect.gen(function*() {
      const line = SessionRunner.makeLine()
      const ran: Array<string> = []
      const each = (step: SessionRunner.Step) =>
        Effect.as(Effect.sleep("100 millis"), { ...resultOf(makeTurn("s", stillClock)), followUps: [`${step.message.text}+`] }).pipe(
          Effect.tap(() => Effect.sync(() => ran.push(step.message.text)))
        )
      const fiber = yield* Effect.forkChild(SessionRunner.drain(line.offer({ text: "a" })!, line, each))
      yield* TestClock.adjust("150 millis")
      line.offer({ text: "waiting" })
      yield* Fiber.interrupt(fiber)
      expect(ran).toEqual(["a"])
      expect(line.busy()).toBe(false)
      const next = line.offer({ text: "c" })
      expect(next).toMatchObject({ message: { text: "c" }, index: 0, waiting: [] })
    }))
})

/** A runner over a fake loop: each turn sees the steering queued in its first 50 ms, then closes, and ends 50 ms later with its follow-ups. */
const fakeLoop = (idleTimeout: Duration.Input, endTakes: Duration.Input = 0) =>
  Effect.gen(function*() {
    const log: Array<string> = []
    const runner = yield* SessionRunner.make({
      makeTurn: (sessionKey, clock) => makeTurn(sessionKey, clock),
      runTurn: (turn, input, _options, first) =>
        Effect.gen(function*() {
          log.push(`${first ? "start+" : ""}turn ${String(input)}`)
          yield* Effect.sleep("50 millis")
          const steering = RunningTurn.drainSteering(turn)
          if (steering.length > 0) log.push(`steered ${steering.join(",")}`)
          // closed: it takes no more input, and ends (commits) 50 ms later
          RunningTurn.close(turn, true)
          yield* Effect.sleep("50 millis")
          return resultOf(turn)
        }),
      afterTurn: () => undefined,
      endSession: (sessionKey) =>
        Effect.andThen(Effect.sync(() => log.push(`end ${sessionKey} begins`)), endTakes === 0 ? Effect.void : Effect.sleep(endTakes)).pipe(
          Effect.andThen(Effect.sync(() => log.push(`end ${sessionKey}`)))
        ),
      idleTimeout: Duration.fromInputUnsafe(idleTimeout)
    })
    const replies: Array<string> = []
    const send = (text: string) =>
      Effect.flatMap(
        runner.route("s", text, (result) => Effect.sync(() => replies.push(result.turnId))),
        (routed) =>
          routed._tag === "Started"
            ? Effect.as(Effect.forkScoped(routed.drain), routed._tag)
            : routed._tag === "Open"
            ? Effect.sync(() => (RunningTurn.steer(routed.turn, text), "Steered"))
            : Effect.succeed(routed._tag)
      )
    return { runner, log, replies, send }
  })

describe("the session runner", () => {
  it.effect("a routed turn, steering while it runs, then its follow-ups in order, then what waited; one reply each", () =>
    Effect.scoped(Effect.gen(function*() {
      const { log, replies, runner, send } = yield* fakeLoop("1 second")
      expect(yield* send("a")).toBe("Started")
      yield* TestClock.adjust("10 millis")
      expect(yield* send("b")).toBe("Steered")
      const first = runner.active("s")!
      RunningTurn.queueFollowUp(first, "f1")
      RunningTurn.queueFollowUp(first, "f2")
      yield* TestClock.adjust("65 millis")
      // the turn has closed, not ended: the message waits behind the drain
      expect(yield* send("c")).toBe("Queued")
      yield* TestClock.adjust("25 millis")
      // the turn has ended and its follow-up was decided on: a message now steers that one
      expect(runner.active("s")).toMatchObject({ closed: false })
      expect(yield* send("d")).toBe("Steered")
      yield* TestClock.adjust("1 second")
      expect(log).toEqual(["start+turn a", "steered b", "turn f1", "steered d", "turn f2", "turn c"])
      expect(replies).toHaveLength(4)
      expect(runner.active("s")).toBeUndefined()
    })))

  it.effect("a routed turn waits for the lock behind a direct turn, and is the one a message steers meanwhile", () =>
    Effect.scoped(Effect.gen(function*() {
      const { log, runner, send } = yield* fakeLoop("1 second")
      const direct = yield* Effect.forkChild(runner.turn("s", "direct", {}))
      yield* TestClock.adjust("10 millis")
      expect(yield* send("a")).toBe("Steered")
      yield* TestClock.adjust("65 millis")
      // the direct turn has closed: the message starts a drain, whose turn waits for the lock
      expect(yield* send("b")).toBe("Started")
      expect(yield* send("c")).toBe("Steered")
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(direct)
      expect(log).toEqual(["start+turn direct", "steered a", "turn b", "steered c"])
    })))

  it.effect("an idle session is released after the idle time, once; used again before, it is kept", () =>
    Effect.scoped(Effect.gen(function*() {
      const { log, runner } = yield* fakeLoop("1 second")
      const turn = () => Effect.forkChild(runner.turn("s", "x", {}))
      yield* turn()
      yield* TestClock.adjust("100 millis")
      yield* TestClock.adjust("999 millis")
      yield* turn()
      yield* TestClock.adjust("100 millis")
      yield* TestClock.adjust("999 millis")
      expect(runner.held()).toBe(1)
      yield* TestClock.adjust("1 millis")
      expect(log).toEqual(["start+turn x", "turn x", "end s begins", "end s"])
      expect(runner.held()).toBe(0)
    })))

  it.effect("a message while the session is releasing waits for sessionEnd, then begins the session again", () =>
    Effect.scoped(Effect.gen(function*() {
      const { log, runner, send } = yield* fakeLoop("1 second", "500 millis")
      yield* send("a")
      yield* TestClock.adjust("1100 millis")
      expect(log).toEqual(["start+turn a", "end s begins"])
      const sent = yield* Effect.forkChild(send("b"))
      yield* TestClock.adjust("400 millis")
      expect(sent.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("100 millis")
      expect(yield* Fiber.join(sent)).toBe("Started")
      yield* TestClock.adjust("100 millis")
      expect(log).toEqual(["start+turn a", "end s begins", "end s", "start+turn b"])
      expect(runner.held()).toBe(1)
      // released again before the scope closes, whose sessionEnd would wait on the TestClock
      yield* TestClock.adjust("2 seconds")
    })))

  it.effect("interrupted while follow-ups are queued: the session lets go, and is released after the idle time", () =>
    Effect.scoped(Effect.gen(function*() {
      const { log, runner } = yield* fakeLoop("1 second")
      const routed = yield* runner.route("s", "a", () => Effect.void)
      const fiber = yield* Effect.forkChild((routed as Extract<SessionRunner.Routed, { _tag: "Started" }>).drain)
      yield* TestClock.adjust("50 millis")
      RunningTurn.queueFollowUp(runner.active("s")!, "f1")
      yield* Fiber.interrupt(fiber)
      expect(runner.active("s")).toBeUndefined()
      yield* TestClock.adjust("1 second")
      expect(log).toEqual(["start+turn a", "end s begins", "end s"])
      expect(runner.held()).toBe(0)
    })))

  it.effect("the sessions that started end when the runner's scope closes", () =>
    Effect.gen(function*() {
      let log: ReadonlyArray<string> = []
      yield* Effect.scoped(Effect.gen(function*() {
        const loop = yield* fakeLoop("1 hour")
        log = loop.log
        yield* Effect.forkChild(loop.runner.turn("s", "x", {}))
        yield* TestClock.adjust("100 millis")
      }))
      expect(log).toEqual(["start+turn x", "end s begins", "end s"])
    }))
})
