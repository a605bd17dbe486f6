/**
 * Durability rule: what a durable run stores is restored exactly or refused
 * when it is stored. A journaled step output, the content the next step
 * receives, a pause's payload, an answer, a run input that would not read
 * back the same from JSON (NaN, Infinity, -0, a Date, a Map, undefined in an
 * array, a bigint, a circular value, a 5,000-deep value) is `NotSerializable`
 * with its path, and nothing is committed; a JSON value comes back as it was,
 * so a run that pauses gives its next step what a run that does not pause
 * gives it.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { SessionState, SessionStore, Step, Workflow, WorkflowError } from "@sessionflow/core"
import { Effect, Ref, Schema } from "effect"
import { freshStores } from "../stores.js"

const deep = (levels: number): unknown => {
  let value: unknown = "bottom"
  for (let i = 0; i < levels; i++) value = { d: value }
  return value
}

const circular = () => {
  const value: Record<string, unknown> = { name: "loop" }
  value.self = value
  return value
}

/**
 * Each value that JSON does not give back, where in `{ v: value }` it is
 * refused (given how many levels the stored value has above `{ v }`), and why.
 */
const refused: ReadonlyArray<readonly [string, () => unknown, string | ((outer: number) => string), string]> = [
  ["NaN", () => NaN, ".v", "NaN"],
  ["Infinity", () => -Infinity, ".v", "-Infinity"],
  ["-0", () => -0, ".v", "-0"],
  ["a Date", () => new Date(0), ".v", "Date"],
  ["a Map", () => new Map([["a", 1]]), ".v", "Map"],
  ["undefined in an array", () => [1, undefined], ".v[1]", "undefined in an array"],
  ["a bigint", () => 10n ** 20n, ".v", "bigint"],
  ["a circular value", circular, ".v.self", "circular"],
  // JSON text keeps it, but an object keeps it only until it is assigned or spread
  ["a __proto__ key", () => JSON.parse(`{"__proto__": {"x": 1}}`), ".v.__proto__", `"__proto__" key`],
  // the limit counts from the stored value's root
  ["a 5,000-deep value", () => deep(5000), (outer) => `.v${".d".repeat(999 - outer)}`, "deeper than 1000 levels"]
]

const expectRefused = (
  error: unknown,
  what: WorkflowError.NotSerializable["what"],
  path: string,
  description: string
) => {
  assert.isTrue(WorkflowError.isWorkflowError(error) && error._tag === "NotSerializable", String(error))
  const refusal = error as WorkflowError.NotSerializable
  expect([refusal.what, refusal.path]).toEqual([what, path])
  expect(refusal.description).toContain(description)
}

/** A workflow whose first step produces `{ v: value }`; the next step records what it receives. */
const producing = (value: () => unknown, received: Ref.Ref<ReadonlyArray<unknown>>, middle?: Step.Any) =>
  Workflow.make({
    name: "values",
    steps: [
      Step.make("produce", () => Effect.sync(() => ({ v: value() }))),
      ...(middle === undefined ? [] : [middle]),
      Step.make(
        "receive",
        ({ previousStepContent }) => Effect.as(Ref.update(received, (r) => [...r, previousStepContent]), "done")
      )
    ]
  })

/** A question that passes on the content it received, once answered. */
const passOn = Step.pause("approve", {
  payload: Schema.Struct({ ok: Schema.Boolean }),
  response: Schema.Boolean,
  ask: () => Effect.succeed({ ok: true }),
  resume: (_, input) => Effect.succeed(input.previousStepContent)
})

const nothingCommitted = Effect.gen(function*() {
  const session = yield* Effect.either(Workflow.getSessionState(Workflow.make({ name: "values" }), "s"))
  assert.isTrue(
    session._tag === "Right" ? Object.keys(session.right).length === 0 : session.left._tag === "SessionNotFound"
  )
  expect(yield* Workflow.unfinishedRuns(Workflow.make({ name: "values" }))).toEqual([])
})

describe("durability rules: what a durable run stores is restored exactly or refused when stored", () => {
  for (const [kind, value, pathAt, description] of refused) {
    const path = typeof pathAt === "string" ? pathAt : pathAt(0)
    const inside = (outer: string) => `${outer}${typeof pathAt === "string" ? pathAt : pathAt(1)}`
    describe(kind, () => {
      it.effect("a journaled step output is refused when written, with its path; the next step never runs", () =>
        Effect.gen(function*() {
          const received = yield* Ref.make<ReadonlyArray<unknown>>([])
          const error = yield* Effect.flip(
            Workflow.run(producing(value, received), "go", { sessionId: "s", durability: "step" })
          )
          expectRefused(error, "journal", inside(".previous"), description)
          expect(yield* Ref.get(received)).toEqual([])
          yield* nothingCommitted
        }).pipe(Effect.provide(SessionStore.layerMemory)))

      it.effect(
        "a run that pauses after the step is refused when it pauses; one that does not pause passes the value on",
        () =>
          Effect.gen(function*() {
            const received = yield* Ref.make<ReadonlyArray<unknown>>([])
            const error = yield* Effect.flip(Workflow.run(producing(value, received, passOn), "go", { sessionId: "s" }))
            expectRefused(error, "journal", inside(".previous"), description)
            yield* nothingCommitted
            // without a pause nothing is stored between the steps
            yield* Workflow.run(producing(value, received), "go", { sessionId: "t" })
            expect((yield* Ref.get(received)).length).toBe(1)
          }).pipe(Effect.provide(SessionStore.layerMemory))
      )

      it.effect("a pause payload is refused when the run pauses", () =>
        Effect.gen(function*() {
          const asking = Workflow.make({
            name: "values",
            steps: [Step.pause("ask", {
              payload: Schema.Unknown,
              response: Schema.Boolean,
              ask: () => Effect.sync(() => ({ v: value() })),
              resume: (ok) => Effect.succeed(ok)
            })]
          })
          expectRefused(
            yield* Effect.flip(Workflow.run(asking, "go", { sessionId: "s" })),
            "pause",
            inside(".payload"),
            description
          )
          yield* nothingCommitted
        }).pipe(Effect.provide(SessionStore.layerMemory)))

      it.effect("an answer is refused before the run is claimed: it stays paused", () =>
        Effect.gen(function*() {
          const received = yield* Ref.make<ReadonlyArray<unknown>>([])
          const wf = producing(() => 1, received, passOn)
          const paused = (yield* Effect.flip(Workflow.run(wf, "go", { sessionId: "s" }))) as WorkflowError.RunPaused
          expectRefused(
            yield* Effect.flip(Workflow.continue(wf, paused.runId, { v: value() })),
            "answer",
            path,
            description
          )
          expect((yield* Workflow.pausedRuns(wf)).map((run) => run.runId)).toEqual([paused.runId])
        }).pipe(Effect.provide(SessionStore.layerMemory)))

      it.effect("a run input is refused before anything runs", () =>
        Effect.gen(function*() {
          const received = yield* Ref.make<ReadonlyArray<unknown>>([])
          const error = yield* Effect.flip(
            Workflow.run(producing(() => 1, received), { v: value() }, { sessionId: "s", durability: "step" })
          )
          expectRefused(error, "input", path, description)
          expect(yield* Ref.get(received)).toEqual([])
        }).pipe(Effect.provide(SessionStore.layerMemory)))
    })
  }

  it.effect("a state nested 5,000 deep is refused with its path, on a whole state and on changes", () =>
    Effect.gen(function*() {
      for (const persist of ["state", "changes"] as const) {
        const wf = Workflow.make({ name: "values", persist, steps: [Step.make("deepen", () => Effect.succeed(1))] })
        yield* Workflow.run(wf, "go", { sessionId: persist })
        const error = yield* Effect.flip(
          Workflow.run(wf, "go", { sessionId: persist, sessionState: { v: deep(5000) } })
        )
        expectRefused(error, "state", `.v${".d".repeat(999)}`, "deeper than 1000 levels")
      }
    }).pipe(Effect.provide(SessionStore.layerMemory)))

  /** A JSON value with what JSON keeps: nesting, floats, unicode, nulls, empty containers, a 900-deep part. */
  const json = () => ({
    v: {
      n: 1.5e-7,
      big: 2 ** 53 - 1,
      neg: -3,
      text: "zwölf 🙂 \u2028",
      none: null,
      empty: [],
      obj: {},
      list: [null, [1, [2]]],
      deep: deep(900)
    }
  })

  for (const [store, layer] of freshStores) {
    it.effect(
      `${store}: a run that pauses gives its next step the value a run that does not pause gives it`,
      () =>
        Effect.gen(function*() {
          const received = yield* Ref.make<ReadonlyArray<unknown>>([])
          yield* Workflow.run(producing(json, received), "go", { sessionId: "plain" })
          const wf = producing(json, received, passOn)
          const paused = (yield* Effect.flip(
            Workflow.run(wf, "go", { sessionId: "s", durability: "step" })
          )) as WorkflowError.RunPaused
          yield* Workflow.continue(wf, paused.runId, true)
          const [plain, continued] = yield* Ref.get(received)
          expect(continued).toStrictEqual(plain)
          expect(continued).toStrictEqual({ v: json() })
        }).pipe(Effect.provide(layer)),
      30_000
    )
  }

  describe("a __proto__ key in a state is refused, so the process that ran and a fresh one read the same", () => {
    /** A workflow whose step adds `extra` (JSON text) to the state. */
    const adding = (persist: "state" | "changes", extra: string) =>
      Workflow.make({
        name: "values",
        persist,
        steps: [Step.make("add", () => SessionState.update((s) => ({ ...s, ...JSON.parse(extra) })))]
      })
    for (const [store, layer] of freshStores) {
      it.effect(`${store}: a step's state, a run's sessionState, updateSessionState`, () =>
        Effect.gen(function*() {
          const stored = (sessionId: string) =>
            Effect.map(Effect.flatMap(SessionStore.SessionStore, (s) => s.load(sessionId)), (s) =>
              s._tag === "Some" ? s.value.state : undefined)
          for (const persist of ["state", "changes"] as const) {
            const sessionId = `${persist}-${store}`
            yield* Workflow.run(adding(persist, `{"notes": ["a"]}`), "go", { sessionId })
            for (
              const [extra, path] of [[`{"__proto__": {"x": 1}}`, ".__proto__"], [
                `{"o": {"__proto__": 1}}`,
                ".o.__proto__"
              ]] as const
            ) {
              const error = yield* Effect.flip(Workflow.run(adding(persist, extra), "go", { sessionId }))
              expectRefused(error, "state", path, `"__proto__" key`)
              // what this process reads (its cache) and what another reads (the store) agree
              expect(yield* Workflow.getSessionState(adding(persist, "{}"), sessionId)).toStrictEqual({ notes: ["a"] })
              expect(yield* stored(sessionId)).toStrictEqual({ notes: ["a"] })
            }
            // an own "__proto__" property made with Object.defineProperty is the same key
            const defining = Workflow.make({
              name: "values",
              persist,
              steps: [Step.make("define", () =>
                SessionState.update((s) => {
                  const next = { ...(s as object), more: 1 }
                  Object.defineProperty(next, "__proto__", {
                    value: { x: 1 },
                    enumerable: true,
                    writable: true,
                    configurable: true
                  })
                  return next
                }))]
            })
            expectRefused(
              yield* Effect.flip(Workflow.run(defining, "go", { sessionId })),
              "state",
              ".__proto__",
              `"__proto__" key`
            )
            expect(yield* Workflow.getSessionState(adding(persist, "{}"), sessionId)).toStrictEqual({ notes: ["a"] })
            expect(yield* stored(sessionId)).toStrictEqual({ notes: ["a"] })
            const updated = yield* Effect.flip(
              Workflow.updateSessionState(
                adding(persist, "{}"),
                sessionId,
                (s) => ({ ...s, ...JSON.parse(`{"__proto__": {}}`) })
              )
            )
            expectRefused(updated, "state", ".__proto__", `"__proto__" key`)
            expect(yield* stored(sessionId)).toStrictEqual({ notes: ["a"] })
          }
          const seeded = yield* Effect.flip(
            Workflow.run(adding("state", "{}"), "go", {
              sessionId: `seeded-${store}`,
              sessionState: JSON.parse(`{"__proto__": {"x": 1}}`)
            })
          )
          expectRefused(seeded, "state", ".__proto__", `"__proto__" key`)
          expect(yield* stored(`seeded-${store}`)).toBeUndefined()
        }).pipe(Effect.provide(layer)), 30_000)

      it.effect(
        `${store}: a journaled step output and a pause payload with a __proto__ key are refused, nothing written`,
        () =>
          Effect.gen(function*() {
            const withProto = () => {
              const value: Record<string, unknown> = { keep: 1 }
              Object.defineProperty(value, "__proto__", {
                value: { x: 1 },
                enumerable: true,
                writable: true,
                configurable: true
              })
              return value
            }
            const received = yield* Ref.make<ReadonlyArray<unknown>>([])
            const journaled = yield* Effect.flip(
              Workflow.run(producing(withProto, received), "go", { sessionId: "s", durability: "step" })
            )
            expectRefused(journaled, "journal", ".previous.v.__proto__", `"__proto__" key`)
            expect(yield* Ref.get(received)).toEqual([])
            const asking = Workflow.make({
              name: "values",
              steps: [Step.pause("ask", {
                payload: Schema.Unknown,
                response: Schema.Boolean,
                ask: () => Effect.sync(() => JSON.parse(`{"v": {"__proto__": {"x": 1}}}`)),
                resume: (ok) => Effect.succeed(ok)
              })]
            })
            expectRefused(
              yield* Effect.flip(Workflow.run(asking, "go", { sessionId: "s" })),
              "pause",
              ".payload.v.__proto__",
              `"__proto__" key`
            )
            yield* nothingCommitted
          }).pipe(Effect.provide(layer)),
        30_000
      )
    }
  })
})
