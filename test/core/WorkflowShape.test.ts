/**
 * Durability rule: a run is carried on only by a workflow of the shape that
 * started it. A run journaled by a six-step workflow and carried on by one
 * with 3, 8 or renamed steps, or another version, is `WorkflowChanged`: it
 * stays as it was and nothing is committed; a workflow that lists the
 * recorded version in `resumes` carries it on. On the memory store, a SQLite
 * file and a PostgreSQL schema.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { Loop, SessionState, SessionStore, Step, Workflow, type WorkflowError } from "@sessionflow/core"
import { Effect, Schema, TestClock } from "effect"
import { freshStores } from "../stores.js"
import { on, processes } from "./utils.js"

class Items extends SessionState.Tag("shape/Items")<Items>()({ items: Schema.Array(Schema.String) }) {}

const leaf = (name: string) =>
  Step.make(name, () => Effect.as(Items.update((s) => ({ items: [...s.items, name] })), name))

const approve = Step.pause("approve", {
  payload: Schema.Struct({ amount: Schema.Number }),
  response: Schema.Boolean,
  ask: () => Effect.succeed({ amount: 5 }),
  resume: (ok) => Effect.as(Items.update((s) => ({ items: [...s.items, ok ? "approved" : "rejected"] })), ok)
})

/** A workflow of the steps named (`approve`: the question), with a version and the versions it resumes. */
const shaped = (
  names: ReadonlyArray<string>,
  options: { readonly version?: string; readonly resumes?: ReadonlyArray<string> } = {}
) =>
  Workflow.make({
    name: "shaped",
    state: Items,
    sessionState: { items: [] },
    ...options,
    steps: names.map((name) => (name === "approve" ? approve : leaf(name)))
  })

const six = ["s1", "s2", "s3", "approve", "s5", "s6"]
const changes = {
  "3 steps": { names: ["s1", "s2", "s3"], difference: "step 4 'approve step' is gone" },
  "8 steps": { names: [...six, "s7", "s8"], difference: "step 7 's7 step' is new" },
  "a renamed step": {
    names: ["s1", "s2", "t3", "approve", "s5", "s6"],
    difference: "step 3 was 's3 step', now 't3 step'"
  }
}

/** Pauses a run of the six-step workflow (version `v1` when given) on a new session. */
const pauseSix = (version?: string) =>
  Effect.gen(function*() {
    const paused = yield* Effect.flip(
      Workflow.run(shaped(six, version === undefined ? {} : { version }), "go", { sessionId: "s" })
    )
    assert.strictEqual(paused._tag, "RunPaused")
    return (paused as WorkflowError.RunPaused).runId
  })

/** The run is still paused where it was, and the session holds nothing. */
const leftAsItWas = (runId: string) =>
  Effect.gen(function*() {
    const [run] = yield* Workflow.pausedRuns(shaped(six))
    expect(run?.runId).toBe(runId)
    expect(run?.journal?.next).toBe(3)
    expect(run?.shape?.steps).toEqual(["s1 step", "s2 step", "s3 step", "approve step", "s5 step", "s6 step"])
    const session = yield* Effect.either(Workflow.getSessionState(shaped(six), "s"))
    assert.isTrue(session._tag === "Left" && session.left._tag === "SessionNotFound")
  })

describe("durability rules: a run is carried on only by a workflow of the shape that started it", () => {
  for (const [store, layer] of freshStores) {
    describe(store, () => {
      for (const [change, { difference, names }] of Object.entries(changes)) {
        it.effect(
          `a run paused by a six-step workflow is not continued or ` +
            `resumed by one with ${change}: WorkflowChanged, nothing committed`,
          () =>
            Effect.gen(function*() {
              const runId = yield* pauseSix()
              const continued = yield* Effect.flip(Workflow.continue(shaped(names), runId, true))
              assert.isTrue(continued._tag === "WorkflowChanged")
              const changed = continued as WorkflowError.WorkflowChanged
              expect(changed.difference).toContain(difference)
              expect(changed.recorded).toContain("6 top-level steps")
              expect(changed.message).toContain(`Run '${runId}'`)
              yield* leftAsItWas(runId)
              const resumed = yield* Effect.flip(Workflow.resume(shaped(names), runId))
              expect(resumed._tag).toBe("WorkflowChanged")
              yield* leftAsItWas(runId)
              // the workflow that started it carries it on
              const done = yield* Workflow.continue(shaped(six), runId, true)
              expect(done.state.items).toEqual(["s1", "s2", "s3", "approved", "s5", "s6"])
            }).pipe(Effect.provide(layer)),
          30_000
        )
      }

      it.effect(
        "a new version of the same steps is a change too, unless it resumes the recorded version",
        () =>
          Effect.gen(function*() {
            const runId = yield* pauseSix("v1")
            const continued = yield* Effect.flip(Workflow.continue(shaped(six, { version: "v2" }), runId, true))
            assert.isTrue(continued._tag === "WorkflowChanged")
            expect((continued as WorkflowError.WorkflowChanged).difference).toBe(
              "the steps are the same, the version is 'v2' instead of 'v1'"
            )
            yield* leftAsItWas(runId)
            // v2 adds two steps and declares runs of v1 compatible
            const done = yield* Workflow.continue(
              shaped([...six, "s7", "s8"], { version: "v2", resumes: ["v1"] }),
              runId,
              true
            )
            expect(done.state.items).toEqual(["s1", "s2", "s3", "approved", "s5", "s6", "s7", "s8"])
          }).pipe(Effect.provide(layer)),
        30_000
      )
    })
  }

  it.effect("an unversioned run is declared compatible by the fingerprint WorkflowChanged shows", () =>
    Effect.gen(function*() {
      const runId = yield* pauseSix()
      const renamed = changes["a renamed step"].names
      const changed =
        (yield* Effect.flip(Workflow.continue(shaped(renamed), runId, true))) as WorkflowError.WorkflowChanged
      const fingerprint = /fingerprint ([0-9a-f]+)/.exec(changed.recorded)![1]!
      const done = yield* Workflow.continue(shaped(renamed, { resumes: [fingerprint] }), runId, true)
      expect(done.state.items).toEqual(["s1", "s2", "s3", "approved", "s5", "s6"])
    }).pipe(Effect.provide(SessionStore.layerMemory)))

  it.effect("a step renamed inside a container changes the shape, named by its path", () =>
    Effect.gen(function*() {
      const looping = (inner: string) =>
        Workflow.make({
          name: "shaped",
          state: Items,
          sessionState: { items: [] },
          steps: [Loop.make({ name: "review", steps: [leaf(inner)], maxIterations: 1 }), approve]
        })
      const paused =
        (yield* Effect.flip(Workflow.run(looping("check"), "go", { sessionId: "s" }))) as WorkflowError.RunPaused
      const changed = yield* Effect.flip(Workflow.continue(looping("verify"), paused.runId, true))
      expect(changed._tag === "WorkflowChanged" && changed.difference).toBe(
        "step 2 was 'review/check step', now 'review/verify step'"
      )
      const done = yield* Workflow.continue(looping("check"), paused.runId, true)
      expect(done.state.items).toEqual(["check", "approved"])
    }).pipe(Effect.provide(SessionStore.layerMemory)))

  it.effect(
    "an abandoned journaled run is not recovered by a changed workflow: recover reports WorkflowChanged, the run stays",
    () =>
      Effect.gen(function*() {
        const { crash, make } = yield* processes
        const [a, b] = [make(), make()]
        const hold = Step.make("s4", () => Effect.never)
        const durable = (steps: ReadonlyArray<Step.Any>) =>
          Workflow.make({ name: "shaped", state: Items, sessionState: { items: [] }, durability: "step", steps })
        yield* Effect.forkDaemon(
          Workflow.run(durable([leaf("s1"), leaf("s2"), leaf("s3"), hold]), "go", { sessionId: "s", runId: "r1" }).pipe(
            on(a)
          )
        )
        yield* Effect.repeat(Workflow.unfinishedRuns(durable([])).pipe(on(b)), {
          until: (runs) => runs[0]?.journal?.next === 3
        })
        yield* crash(a)
        yield* TestClock.adjust("31 seconds")
        const [recovered] = yield* Workflow.recover(durable([leaf("s1"), leaf("s3"), leaf("s2"), leaf("s4")])).pipe(
          on(b)
        )
        assert.isTrue(recovered?.outcome._tag === "Failure")
        expect(JSON.stringify(recovered?.outcome)).toContain("WorkflowChanged")
        const [still] = yield* Workflow.unfinishedRuns(durable([])).pipe(on(b))
        expect([still?.runId, still?.status, still?.abandoned]).toEqual(["r1", "running", true])
        // the same steps (the fourth one finishing now) carry it on from step 4
        const done = yield* Workflow.resume(durable([leaf("s1"), leaf("s2"), leaf("s3"), leaf("s4")]), "r1").pipe(on(b))
        expect(done.state.items).toEqual(["s1", "s2", "s3", "s4"])
      })
  )
})
