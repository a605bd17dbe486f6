/**
 * Scheduled runs: {@link layer} runs workflows on cron schedules (Effect's
 * `Cron`, in UTC), once per tick across every process that runs it over one
 * store. Each schedule is kept in the store with its next tick; at that tick
 * the process that claims it (a conditional write that moves the next tick
 * on: exactly one process wins) starts the run, with `Workflow.start`, on the
 * schedule's session or on a new session per tick. Its run id names the
 * tick (see {@link runIdOf}), so a tick is never run twice.
 *
 * Missed ticks (every process was down, or busy past a tick): when a process
 * finds a schedule's next tick past, it fires one run, for the latest tick
 * that passed, and moves the next tick past now; the ticks missed before it
 * are skipped, not caught up.
 *
 * ```ts no-check
 * const Nightly = Schedules.layer({
 *   schedules: [{ name: "nightly", workflow: report, cron: "0 2 * * *", input: { days: 1 } }]
 * })
 * // provide it (with a SessionStore and the workflows' requirements) next to your app
 * ```
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Cron from "effect/Cron"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as ids from "./internal/ids.js"
import * as SessionStore from "./SessionStore.js"
import * as Workflow from "./Workflow.js"
import * as WorkflowError from "./WorkflowError.js"

/**
 * One schedule: run `workflow` with `input` at every tick of `cron`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Schedule<W extends Workflow.Any> {
  /** unique per workflow; the key of the schedule in the store */
  readonly name: string
  readonly workflow: W
  /**
   * a cron expression of 5 fields (minute hour day month weekday) or 6 (with
   * seconds first), in UTC
   */
  readonly cron: string
  readonly input: Workflow.Input<W>
  /** the session every tick runs on; absent: a new session per tick */
  readonly sessionId?: string | undefined
  /** the other options of each run (e.g. `onBusy` for a fixed session, `userId`) */
  readonly runOptions?: Omit<Workflow.RunOptions<Workflow.StateEncoded<W>>, "sessionId" | "runId"> | undefined
}

/**
 * @since 0.1.0
 * @category options
 */
export interface Options<W extends Workflow.Any> {
  readonly schedules: ReadonlyArray<Schedule<W>>
  /**
   * the longest wait between two looks at the store's schedules (one query
   * each); between them it wakes at the next tick it knows. Default 1 second
   */
  readonly pollInterval?: Duration.DurationInput | undefined
}

/**
 * The defaults of {@link Options}.
 *
 * @since 0.1.0
 * @category options
 */
export const defaults = {
  pollInterval: Duration.seconds(1)
} as const

/**
 * Parses a cron expression as schedules read it (in UTC), or an
 * `InvalidSchedule` that says why not.
 *
 * @since 0.1.0
 * @category parsing
 */
export const parseCron = (
  workflowName: string,
  name: string,
  cron: string
): Either.Either<Cron.Cron, WorkflowError.InvalidSchedule> =>
  Either.mapLeft(
    Cron.parse(cron, "UTC"),
    (error) => new WorkflowError.InvalidSchedule({ workflowName, name, description: `${error.message}: '${cron}'` })
  )

/**
 * The first tick of `cron` after `after` (epoch milliseconds).
 *
 * @since 0.1.0
 * @category ticks
 */
export const nextTick = (cron: Cron.Cron, after: number): number => Cron.next(cron, after).getTime()

/**
 * The latest tick of `cron` at or before `at` (epoch milliseconds).
 *
 * @since 0.1.0
 * @category ticks
 */
export const latestTick = (cron: Cron.Cron, at: number): number => Cron.prev(cron, at + 1000).getTime()

/**
 * The run id of a schedule's tick: `<workflow>/<schedule>@<tick, ISO 8601>`.
 *
 * @since 0.1.0
 * @category ticks
 */
export const runIdOf = (workflowName: string, name: string, tick: number): string =>
  `${workflowName}/${name}@${new Date(tick).toISOString()}`

/**
 * The schedules the store keeps (of one workflow, by name, or of all, by
 * workflow then name), with their next tick: what the CLI's `schedules` and
 * the server's `GET /workflows/:name/schedules` show. A schedule stays listed
 * after it is taken out of every process's layer (it then fires no more).
 *
 * @since 0.1.0
 * @category listing
 */
export const list = Effect.fn("Schedules.list")(
  function*(workflowName?: string) {
    const store = yield* SessionStore.SessionStore
    return yield* store.schedules({ workflowName })
  }
)

/** A schedule with its parsed cron. */
interface Parsed<W extends Workflow.Any> {
  readonly schedule: Schedule<W>
  readonly cron: Cron.Cron
}

/**
 * Checks the schedules: each cron parses, each name is a valid id, no two
 * schedules of one workflow share a name.
 *
 * @since 0.1.0
 * @category parsing
 */
export const validate = <W extends Workflow.Any>(
  schedules: ReadonlyArray<Schedule<W>>
): Effect.Effect<ReadonlyArray<Parsed<W>>, WorkflowError.InvalidSchedule> =>
  Effect.gen(function*() {
    const seen = new Set<string>()
    const parsed: Array<Parsed<W>> = []
    for (const schedule of schedules) {
      const workflowName = schedule.workflow.name
      const problem = ids.problem(schedule.name)
      if (problem !== undefined) {
        return yield* new WorkflowError.InvalidSchedule({
          workflowName,
          name: schedule.name,
          description: ids.describe("schedule name", schedule.name, problem).replace(" id", "")
        })
      }
      const key = JSON.stringify([workflowName, schedule.name])
      if (seen.has(key)) {
        return yield* new WorkflowError.InvalidSchedule({
          workflowName,
          name: schedule.name,
          description: "two schedules of the workflow have this name"
        })
      }
      seen.add(key)
      parsed.push({ schedule, cron: yield* parseCron(workflowName, schedule.name, schedule.cron) })
    }
    return parsed
  })

/**
 * The scheduler itself: runs until interrupted (see {@link layer}). Its
 * schedules are checked first (a bad one fails it with `InvalidSchedule`); a
 * failed look at the store is logged and tried again after `pollInterval`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const run = <W extends Workflow.Any>(
  options: Options<W>
): Effect.Effect<never, WorkflowError.InvalidSchedule, SessionStore.SessionStore | Workflow.Context<W>> =>
  Effect.gen(function*() {
    const parsed = yield* validate(options.schedules)
    return yield* loop(parsed, options)
  }).pipe(Effect.annotateLogs("module", "Schedules"))

const loop = <W extends Workflow.Any>(
  parsed: ReadonlyArray<Parsed<W>>,
  options: Options<W>
): Effect.Effect<never, never, SessionStore.SessionStore | Workflow.Context<W>> =>
  Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    const pollMillis = Duration.toMillis(Duration.decode(options.pollInterval ?? defaults.pollInterval))

    /** starts the run of a tick this process claimed */
    const fire = ({ schedule }: Parsed<W>, tick: number) => {
      const workflowName = schedule.workflow.name
      const runId = runIdOf(workflowName, schedule.name, tick)
      return Workflow.start(schedule.workflow, schedule.input, {
        ...schedule.runOptions,
        runId,
        ...(schedule.sessionId === undefined ? {} : { sessionId: schedule.sessionId })
      }).pipe(
        Effect.tap(() =>
          Effect.logInfo(`sessionflow: schedule '${schedule.name}' of '${workflowName}' started run ${runId}`)
        ),
        Effect.catchAllCause((cause) =>
          Effect.logWarning(
            `sessionflow: schedule '${schedule.name}' of '${workflowName}' could not start run ${runId}`,
            cause
          )
        )
      )
    }

    /** one look at the schedules: fires what is due, returns when to look next */
    const tick = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const stored = new Map(
        (yield* store.schedules({})).map((
          schedule
        ) => [JSON.stringify([schedule.workflowName, schedule.name]), schedule])
      )
      let next = now + pollMillis
      for (const entry of parsed) {
        const { cron, schedule } = entry
        const workflowName = schedule.workflow.name
        let found = stored.get(JSON.stringify([workflowName, schedule.name]))
        if (found === undefined || found.cron !== schedule.cron) {
          found = yield* store.putSchedule({
            workflowName,
            name: schedule.name,
            cron: schedule.cron,
            nextTick: nextTick(cron, now),
            now
          })
        }
        if (found.nextTick > now) {
          next = Math.min(next, found.nextTick)
          continue
        }
        // due: the latest tick that passed fires, once; the ones missed before it are skipped
        const fired = Math.max(found.nextTick, latestTick(cron, now))
        const following = nextTick(cron, now)
        next = Math.min(next, following)
        const claimed = yield* store.claimScheduleTick(workflowName, schedule.name, {
          tick: found.nextTick,
          next: following,
          now
        })
        if (claimed) yield* Effect.forkScoped(fire(entry, fired))
      }
      return next - now
    })

    const forever = tick.pipe(
      Effect.catchAll((error) =>
        Effect.as(Effect.logWarning("sessionflow: could not look at the schedules", error), pollMillis)
      ),
      Effect.flatMap((wait) => Effect.sleep(Duration.millis(Math.max(0, wait)))),
      Effect.forever
    )
    return yield* Effect.scoped(forever)
  }) as Effect.Effect<never, never, SessionStore.SessionStore | Workflow.Context<W>>

/**
 * Checks the schedules (a bad one fails the layer with `InvalidSchedule`)
 * and runs {@link run} in the background for the life of the layer. Runs it
 * started that are still going when the layer closes are left unfinished,
 * for recovery (`DurableRuns`), like every background run.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <W extends Workflow.Any>(
  options: Options<W>
): Layer.Layer<never, WorkflowError.InvalidSchedule, SessionStore.SessionStore | Workflow.Context<W>> =>
  Layer.scopedDiscard(
    Effect.flatMap(validate(options.schedules), (parsed) => Effect.forkScoped(loop(parsed, options)))
  )
