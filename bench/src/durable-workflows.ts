/**
 * The workflows and stores of the durable-run figures (`durable.ts`), shared
 * by the bench process and the child processes it starts, so that both run
 * the very same shapes. sessionflow is imported by its package names, so it
 * runs from the compiled `dist` of each package, as users run it.
 */
import { SessionState, type SessionStore, Step, Workflow } from "@sessionflow/core"
import { PgSessionStore } from "@sessionflow/store-pg"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { advance, emptyState, STEPS } from "./workload.ts"

/** The bench's typed state, as in the other workloads. */
export class Bench extends SessionState.Tag("bench/DurableState")<Bench>()({
  counter: Schema.Number,
  items: Schema.Array(Schema.String)
}) {}

/** The workload's ten steps on the typed state; `durability` as given. */
export const tenSteps = (durability: "run" | "step") =>
  Workflow.make({
    name: "bench-durable",
    state: Bench,
    sessionState: emptyState(),
    durability,
    steps: Array.from({ length: STEPS }, (_, i) => Step.make(`step-${i + 1}`, () => Bench.update(advance)))
  })

/** One step of the workload, then a question; the answer's step updates the state once more. */
export const approval = Workflow.make({ name: "bench-approval", state: Bench, sessionState: emptyState() }).pipe(
  Workflow.andThen(Step.make("before", () => Bench.update(advance))),
  Workflow.andThen(Step.pause("approve", {
    payload: Schema.Struct({ counter: Schema.Number }),
    response: Schema.Struct({ approved: Schema.Boolean }),
    ask: () => Effect.map(Bench.get, (s) => ({ counter: s.counter })),
    resume: ({ approved }) => Effect.as(Bench.update(advance), approved)
  }))
)

/**
 * The workflow of the crash figure: ten durable steps; `onStep(n)` runs at
 * the start of step n (the worker prints, and stalls at the step it is to be
 * killed in; the supervisor prints when it runs a step).
 */
export const crashable = (onStep: (n: number) => Effect.Effect<void>) =>
  Workflow.make({
    name: "bench-crash",
    state: Bench,
    sessionState: emptyState(),
    durability: "step",
    steps: Array.from(
      { length: STEPS },
      (_, i) => Step.make(`step-${i + 1}`, () => Effect.zipRight(onStep(i + 1), Bench.update(advance)))
    )
  })

/**
 * A store by its spec: a SQLite file (the store's default, `synchronous=NORMAL` in WAL),
 * `normal:<file>` for one with `synchronous=NORMAL`, or `pg:<url>#<schema>`
 * for a schema of a PostgreSQL database.
 */
export const storeLayer = (spec: string): Layer.Layer<SessionStore.SessionStore, unknown> => {
  if (spec.startsWith("normal:")) return SqliteSessionStore.layer({ filename: spec.slice(7), synchronous: "NORMAL" })
  if (!spec.startsWith("pg:")) return SqliteSessionStore.layer({ filename: spec })
  const [url, schema] = spec.slice(3).split("#") as [string, string]
  return PgSessionStore.layer({ url, schema })
}
