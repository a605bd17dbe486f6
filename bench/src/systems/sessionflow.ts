/**
 * sessionflow, imported by its package names: the compiled `dist` of each
 * package, as users run it (not the sources through the bench's TypeScript loader).
 */
import { SessionState, SessionStore, Step, Workflow } from "@sessionflow/core"
import { PgSessionStore } from "@sessionflow/store-pg"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Schema from "effect/Schema"
import { advance, type BenchState, emptyState, STEPS } from "../workload.ts"
import { databaseUrl, freshSchema } from "./postgres.ts"
import type { Runner } from "./types.ts"

/** The typed state: a Schema-backed tag, as the README recommends. */
class Bench extends SessionState.Tag("bench/BenchState")<Bench>()({
  counter: Schema.Number,
  items: Schema.Array(Schema.String)
}) {}

const typedWorkflow = (steps: number, persist: "state" | "changes" = "state") =>
  Workflow.make({
    name: "bench",
    state: Bench,
    persist,
    sessionState: emptyState(),
    steps: Array.from({ length: steps }, (_, i) => Step.make(`step-${i + 1}`, () => Bench.update(advance)))
  })

/** The same workflow on the untyped state view (no Schema decode/encode). */
const untypedWorkflow = (steps: number) =>
  Workflow.make({
    name: "bench",
    sessionState: { ...emptyState() },
    steps: Array.from(
      { length: steps },
      (_, i) =>
        Step.make(
          `step-${i + 1}`,
          () => SessionState.update((s) => advance(s as unknown as BenchState) as unknown as SessionState.State)
        )
    )
  })

export interface Options {
  /** `undefined`: `SessionStore.layerMemory`; else the SQLite file. */
  readonly filename?: string | undefined
  readonly typed: boolean
  /** `SqliteSessionStore.layer`'s `synchronous` option (default: SQLite's, FULL). */
  readonly synchronous?: "NORMAL" | undefined
  /** `PgSessionStore.layer` on a fresh schema of the bench database (named after `filename`) instead of SQLite. */
  readonly postgres?: boolean | undefined
  /**
   * Steps per run (default: the workload's ten); the profiler compares 1 and 10 to split per-run from per-step costs.
   */
  readonly steps?: number | undefined
  /** The workflow's `persist` option (typed state only; default `"state"`). */
  readonly persist?: "state" | "changes" | undefined
  /** The runs' `events` option: `"stored"` writes each run's events to the store's event log. */
  readonly events?: "stored" | undefined
}

export const make = async (options: Options): Promise<Runner> => {
  const postgres = options.filename !== undefined && options.postgres === true
    ? await freshSchema(options.filename)
    : undefined
  const layer: Layer.Layer<SessionStore.SessionStore, unknown> = options.filename === undefined
    ? SessionStore.layerMemory
    : postgres !== undefined
    ? PgSessionStore.layer({ url: databaseUrl(), schema: postgres.schema })
    : SqliteSessionStore.layer({ filename: options.filename, synchronous: options.synchronous })
  const runtime = ManagedRuntime.make(layer)
  await runtime.runPromise(Effect.void)
  // one runner for both kinds of state
  const wf: Workflow.Any = options.typed
    ? typedWorkflow(options.steps ?? STEPS, options.persist)
    : untypedWorkflow(options.steps ?? STEPS)
  const runOnce = (sessionId: string) => Workflow.run(wf, "go", { sessionId, events: options.events })
  return {
    run: (sessionId, runs) =>
      runtime.runPromise(Effect.gen(function*() {
        for (let i = 0; i < runs; i++) yield* runOnce(sessionId)
      })),
    seed: (sessionId, state) =>
      runtime.runPromise(Effect.asVoid(Workflow.run(wf, "go", { sessionId, sessionState: state }))),
    runSessions: (sessionIds, concurrency) =>
      runtime.runPromise(Effect.forEach(sessionIds, runOnce, { concurrency, discard: true })),
    prefillHistory: (sessionId, runs) =>
      runtime.runPromise(Effect.gen(function*() {
        // run records committed through the store, as a run would, but
        // without changing the state
        const store = yield* SessionStore.SessionStore
        const now = Date.now()
        for (let i = 0; i < runs; i++) {
          yield* store.commit({
            sessionId,
            workflowName: wf.name,
            expectedVersion: 0,
            run: {
              runId: `prefill-${sessionId}-${i}`,
              sessionId,
              workflowName: wf.name,
              status: "completed",
              input: "go",
              content: null,
              startedAt: now,
              completedAt: now
            }
          })
        }
      })),
    counter: (sessionId) =>
      runtime.runPromise(
        Workflow.getSessionState(wf, sessionId).pipe(
          Effect.map((s) => (s as BenchState).counter),
          Effect.catchTag("SessionNotFound", () => Effect.succeed(0))
        )
      ),
    close: async () => {
      await runtime.dispose()
      await postgres?.drop()
    }
  }
}
