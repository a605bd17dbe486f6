/**
 * A process of the chaos run (started by the controller, killed, stopped and
 * restarted by it):
 *
 *   node --import tsx worker.ts client|supervisor <name> <incarnation> <config JSON>
 *
 * - `client`: from a PRNG seeded with the run's seed, its name and its
 *   incarnation, runs a few lanes of operations on the run's few sessions
 *   (runs and background runs with every `onBusy`, signals, continues,
 *   cancels, forks, prunes, retries of earlier run ids) and appends what it
 *   asked and what it was told to `history-<name>.jsonl`. A line `stop` on
 *   stdin ends it: the lanes finish their operation (for a few seconds at
 *   most) and the process exits; its background runs are left to the
 *   supervisors.
 * - `supervisor`: runs `DurableRuns.layer` for the chaos workflows, and
 *   `Schedules.layer` with a schedule of `chaos-work` every 5 seconds on the
 *   first session (`onBusy: "enqueue"`), until it is killed; started to
 *   settle the run (`CHAOS_SETTLING=1`), without the schedule.
 *
 * Prints `ready` once its store is open.
 */
import { DurableRuns, Schedules, Workflow } from "@sessionflow/core"
import { Effect, Fiber, Layer, Ref } from "effect"
import * as path from "node:path"
import * as readline from "node:readline"
import { storeLayer } from "../stores.js"
import { type ChaosConfig, storeOptions } from "./config.js"
import { deriveSeed, mulberry32, type Prng } from "./prng.js"
import { makeRecorder } from "./recorder.js"
import { type Input, makeWorkflows, scheduleName, signalName, type WorkflowKey, workflowKeys } from "./workflows.js"

const [role, name, incarnationArg, configArg] = process.argv.slice(2) as [string, string, string, string]
const config = JSON.parse(configArg) as ChaosConfig
const incarnation = Number(incarnationArg)
const workflows = makeWorkflows(path.join(config.dir, "effects.jsonl"))
const historyFile = path.join(config.dir, `history-${name}.jsonl`)
const lease = `${config.leaseMillis} millis` as const

/** Lanes of operations per client process. */
const lanes = 4

const stopping = { value: false }

const stopOnStdin = Effect.async<void>((resume) => {
  const lines = readline.createInterface({ input: process.stdin })
  lines.on("line", (line) => {
    if (line.trim() === "stop") {
      lines.close()
      resume(Effect.void)
    }
  })
})

const { nextId, recorded } = makeRecorder(historyFile, name, incarnation)

// -----------------------------------------------------------------------------
// operations
// -----------------------------------------------------------------------------

const anyWorkflow = (key: WorkflowKey) => workflows[key] as typeof workflows.work

/** How long each step of a run works: mostly short, now and then 3 seconds (a queue head that holds its turn). */
const durations = (rng: Prng): Array<number> => [0, 1, 2].map(() => (rng.chance(0.12) ? 3000 : rng.int(100, 1200)))

const showOutput = (out: Workflow.RunOutput<unknown, { readonly applied: ReadonlyArray<string> }>) => ({
  runId: out.runId,
  sessionId: out.sessionId,
  content: out.content,
  applied: out.state.applied.length,
  last: out.state.applied.at(-1)
})

interface Sent {
  readonly key: WorkflowKey
  readonly runId: string
  readonly input: Input
  readonly sessionId: string
  readonly options: Record<string, unknown>
}

/** Blocks the event loop for `millis` (a stalled process: a long GC pause, a busy neighbour). */
const busy = (millis: number) => {
  const end = Date.now() + millis
  while (Date.now() < end) {
    // spin
  }
}

const makeClient = (rng: Prng) =>
  Effect.gen(function*() {
    /** the tracked runs this process sent, for retries and cancels */
    const sent = yield* Ref.make<ReadonlyArray<Sent>>([])

    const runOptions = (key: WorkflowKey, background: boolean) => {
      const onBusy = rng.weighted({ enqueue: 5, reject: 2, interrupt: 1, default: 2 })
      const durability = rng.chance(0.5) ? "step" : "run"
      const options: Record<string, unknown> = {
        sessionId: rng.pick(config.sessions),
        leaseDuration: lease,
        ...(onBusy === "default" ? {} : { onBusy }),
        ...(durability === "step" ? { durability } : {}),
        ...(background || rng.chance(0.7) ? { events: "stored" } : {}),
        // a conflict retry starts over: only where no journal is promised
        ...(durability === "run" && onBusy !== "enqueue" && rng.chance(0.4) ? { retryOnConflict: 3 } : {})
      }
      // plain runs (no id, no journal) are known to the store only when they end or queue
      const tracked = background || durability === "step" || rng.chance(0.6)
      return { options, tracked, key }
    }

    const pickKey = () => rng.weighted<WorkflowKey>({ work: 5, wait: 3, sleep: 1, pause: 1 })

    const newRun = (background: boolean) =>
      Effect.gen(function*() {
        const key = background ? pickKey() : rng.weighted<WorkflowKey>({ work: 6, wait: 1, sleep: 1, pause: 1 })
        const { options, tracked } = runOptions(key, background)
        const id = nextId()
        const input: Input = { token: id, ms: durations(rng) }
        const runId = tracked ? `r-${id}` : undefined
        const all = { ...options, ...(runId === undefined ? {} : { runId }) }
        if (runId !== undefined) {
          yield* Ref.update(
            sent,
            (s) => [...s, { key, runId, input, sessionId: String(options.sessionId), options: all }]
          )
        }
        const wf = anyWorkflow(key)
        const args = { wf: wf.name, input, options: all }
        if (background) {
          yield* recorded("start", args, Workflow.start(wf, input, all as Workflow.RunOptions<never>), (s) => s, id)
        } else {
          yield* recorded("run", args, Workflow.run(wf, input, all as Workflow.RunOptions<never>), showOutput, id)
        }
      })

    /** A run id sent before, sent again with the same input (an idempotent retry). */
    const retry = Effect.gen(function*() {
      const mine = yield* Ref.get(sent)
      if (mine.length === 0) return
      const old = rng.pick(mine)
      const wf = anyWorkflow(old.key)
      yield* recorded(
        "retry",
        { wf: wf.name, input: old.input, options: old.options },
        Workflow.run(wf, old.input, old.options as Workflow.RunOptions<never>),
        showOutput
      )
    })

    const unfinished = (key: WorkflowKey) => Effect.orElseSucceed(Workflow.unfinishedRuns(anyWorkflow(key)), () => [])

    /**
     * Signals the oldest run of `chaos-wait` that waits (watching for one for
     * up to 2 s, so that the lanes of every client that watch signal it
     * together, as soon as it waits), 1–3 times; or, now and then, a
     * running one (the signal is kept). A run at its last wait goes first.
     */
    const signal = Effect.gen(function*() {
      const running = rng.chance(0.15)
      let target: { readonly runId: string } | undefined
      for (let look = 0; look < 40 && target === undefined; look++) {
        const runs = yield* unfinished("wait")
        // a run at its last wait first (its pause key names the step's index, 3): two signals at once are a race there
        target = running
          ? runs.find((run) => run.status === "running")
          : runs.find((run) => run.pause?.kind === "signal" && run.pause.key.startsWith("3:")) ??
            runs.find((run) => run.pause?.kind === "signal")
        if (target === undefined) yield* Effect.sleep("40 millis")
      }
      if (target === undefined) return
      const runId = target.runId
      // every lane that found it fires at the same instant (the next 200 ms of the clock): a race across processes
      yield* Effect.sleep(200 - (Date.now() % 200))
      // a stall of this process's event loop (a long GC pause) just after its signals went out: the
      // callers of one instant then take the run in another order than they stored their signals
      const stall = { after: rng.int(0, 20), millis: rng.chance(0.7) ? rng.int(10, 120) : 0 }
      yield* Effect.fork(Effect.delay(Effect.sync(() => busy(stall.millis)), stall.after))
      yield* Effect.forEach(Array.from({ length: rng.int(1, 3) }), () => {
        const id = nextId()
        return recorded(
          "signal",
          { wf: workflows.wait.name, runId, signal: signalName, value: id },
          Workflow.signal(workflows.wait, runId, signalName, id, { leaseDuration: lease }),
          (result) =>
            result._tag === "Delivered"
              ? { _tag: "Delivered", seq: result.seq, output: showOutput(result.output) }
              : result,
          id
        )
      }, { concurrency: "unbounded", discard: true })
    })

    /** Answers a question of `chaos-pause`, naming its pause or not. */
    const answer = Effect.gen(function*() {
      const runs = (yield* unfinished("pause")).filter((run) => run.pause?.kind === "question")
      if (runs.length === 0) return
      const target = rng.pick(runs)
      const id = nextId()
      const named = rng.chance(0.6)
      const options = { leaseDuration: lease, ...(named ? { pause: target.pause!.key } : {}) }
      yield* recorded(
        "continue",
        { wf: workflows.pause.name, runId: target.runId, response: { ok: true, by: id }, options },
        Workflow.continue(workflows.pause, target.runId, { ok: true, by: id }, options),
        showOutput,
        id
      )
    })

    /** Cancels an unfinished run (or one this process sent, which may have ended). */
    const cancel = Effect.gen(function*() {
      const key = pickKey()
      const runs = yield* unfinished(key)
      const mine = yield* Ref.get(sent)
      const runId = runs.length > 0 && rng.chance(0.7)
        ? rng.pick(runs).runId
        : mine.length > 0
        ? rng.pick(mine).runId
        : undefined
      if (runId === undefined) return
      const wf = anyWorkflow(
        runs.some((r) => r.runId === runId) ? key : mine.find((m) => m.runId === runId)?.key ?? key
      )
      yield* recorded("cancel", { wf: wf.name, runId }, Workflow.cancel(wf, runId))
    })

    const fork = Effect.gen(function*() {
      const sessionId = rng.pick(config.sessions)
      const id = nextId()
      yield* recorded(
        "fork",
        { sessionId, newSessionId: `fork-${id}` },
        Workflow.fork(workflows.work, sessionId, { newSessionId: `fork-${id}` }),
        (r) => r,
        id
      )
    })

    const prune = recorded("prune", { olderThan: "1 hour" }, Workflow.prune(workflows.work, { olderThan: "1 hour" }))

    const operation = Effect.suspend(() => {
      switch (
        rng.weighted({ run: 6, start: 8, retry: 2, signal: 10, continue: 2, cancel: 1.5, fork: 1, prune: 0.5 })
      ) {
        case "run":
          return newRun(false)
        case "start":
          return newRun(true)
        case "retry":
          return retry
        case "signal":
          return signal
        case "continue":
          return answer
        case "cancel":
          return cancel
        case "fork":
          return fork
        case "prune":
          return Effect.asVoid(prune)
      }
    })

    const lane = Effect.gen(function*() {
      while (!stopping.value) {
        yield* operation
        yield* Effect.sleep(rng.int(20, 300))
      }
    })
    return lane
  })

const client = Effect.gen(function*() {
  const rngs = Array.from({ length: lanes }, (_, i) => mulberry32(deriveSeed(config.seed, name, incarnation, i)))
  console.log("ready")
  const fibers = yield* Effect.forEach(rngs, (rng) => Effect.flatMap(makeClient(rng), Effect.fork))
  yield* stopOnStdin
  stopping.value = true
  // each lane ends after its operation, or is interrupted (recorded as such) after a while
  yield* Effect.timeout(Fiber.joinAll(fibers), "8 seconds").pipe(
    Effect.catchAll(() => Fiber.interruptAll(fibers))
  )
})

const supervisor = Effect.gen(function*() {
  // ready once the store answers
  yield* Workflow.unfinishedRuns(workflows.work)
  console.log("ready")
  const supervised = DurableRuns.layer({
    workflows: workflowKeys.map(anyWorkflow),
    pollInterval: "300 millis",
    leaseDuration: lease
  })
  // settling (the faults stopped), the schedule's ticks stop too: the sessions come to rest
  if (process.env.CHAOS_SETTLING === "1") return yield* Layer.launch(supervised)
  return yield* Layer.launch(Layer.merge(
    supervised,
    // every supervisor runs the schedule: each tick runs once, in the one that claims it
    Schedules.layer({
      schedules: [{
        name: scheduleName,
        workflow: workflows.work,
        cron: "*/5 * * * * *",
        input: { token: scheduleName, ms: [200, 200, 200] },
        sessionId: config.sessions[0]!,
        runOptions: { onBusy: "enqueue", events: "stored", durability: "step", leaseDuration: lease }
      }],
      pollInterval: "300 millis"
    })
  ))
})

const program = role === "client" ? Effect.scoped(client) : supervisor

Effect.runPromise(
  program.pipe(Effect.provide(storeLayer(config.spec, storeOptions(config, name))))
).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
