/**
 * Session history at the workflow level: the state at a kept version, the
 * list of versions, retention from the workflow's `history` option, and
 * forks (from a version, and from a paused run's point), on the memory store
 * and on SQLite.
 */
import { assert, describe, it } from "@effect/vitest"
import { SessionState, SessionStore, Step, type StepInput, Workflow } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Effect, type Layer, Schema } from "effect"

class Cart extends SessionState.Tag("history/Cart")<Cart>()({
  items: Schema.Array(Schema.String),
  total: Schema.Number
}) {}

const shop = (
  options: { readonly persist?: "state" | "changes"; readonly history?: SessionStore.HistoryOptions } = {}
) =>
  Workflow.make({
    name: "shop",
    state: Cart,
    sessionState: { items: [], total: 0 },
    input: Schema.String,
    ...options
  }).pipe(
    Workflow.andThen("add", ({ input }) =>
      Effect.as(Cart.update((cart) => ({ items: [...cart.items, input], total: cart.total + 1 })), input))
  )

const Decision = Schema.Struct({ approved: Schema.Boolean })

const approvals = Workflow.make({
  name: "approvals",
  state: Cart,
  sessionState: { items: [], total: 0 },
  input: Schema.String
}).pipe(
  Workflow.andThen(Step.pause("approve", {
    payload: Schema.String,
    response: Decision,
    ask: (input: StepInput.StepInput<unknown, string>) => Effect.succeed(`buy ${input.input}?`),
    resume: (decision, input: StepInput.StepInput<unknown, string>) =>
      decision.approved
        ? Effect.as(Cart.update((cart) => ({ items: [...cart.items, input.input], total: cart.total + 1 })), "approved")
        : Effect.succeed("rejected")
  }))
)

const stores: ReadonlyArray<readonly [string, Layer.Layer<SessionStore.SessionStore, unknown>]> = [
  ["memory", SessionStore.layerMemory],
  ["SQLite", SqliteSessionStore.layer({ filename: ":memory:" })]
]

describe("the store's history option", () => {
  for (
    const [name, layer] of [
      ["memory", SessionStore.layerMemoryWith({ history: { keep: 2 } })],
      ["SQLite", SqliteSessionStore.layer({ filename: ":memory:", history: { keep: 2 } })]
    ] as const
  ) {
    it.effect(
      `${name}: keeps what the store says for a workflow that does not say, and the workflow's own otherwise`,
      () =>
        Effect.gen(function*() {
          for (const item of ["a", "b", "c"]) yield* Workflow.run(shop(), item, { sessionId: "st" })
          assert.deepStrictEqual((yield* Workflow.sessionVersions(shop(), "st")).map((v) => v.version), [2, 3])
          const all = shop({ history: { keep: "all" } })
          for (const item of ["d", "e", "f"]) yield* Workflow.run(all, item, { sessionId: "st" })
          assert.deepStrictEqual((yield* Workflow.sessionVersions(all, "st")).map((v) => v.version), [2, 3, 4, 5, 6])
        }).pipe(Effect.provide(layer))
    )
  }
})

for (const [name, layer] of stores) {
  describe(`session history (${name})`, () => {
    for (const persist of ["state", "changes"] as const) {
      it.effect(`persist ${persist}: the state at each version, and what each version changed`, () =>
        Effect.gen(function*() {
          const wf = shop({ persist })
          const a = yield* Workflow.run(wf, "apple", { sessionId: "s" })
          yield* Workflow.run(wf, "pear", { sessionId: "s" })
          yield* Workflow.updateSessionState(wf, "s", (cart) => ({ ...cart, total: 10 }))
          const versions = yield* Workflow.sessionVersions(wf, "s")
          assert.deepStrictEqual(versions.map((v) => [v.version, v.changed]), [
            [1, ["items", "total"]],
            [2, ["items", "total"]],
            [3, ["total"]]
          ])
          assert.strictEqual(versions[0]!.runId, a.runId)
          assert.isUndefined(versions[2]!.runId)
          assert.deepStrictEqual(yield* Workflow.getSessionState(wf, "s", { version: 1 }), {
            items: ["apple"],
            total: 1
          })
          assert.deepStrictEqual(yield* Workflow.getSessionState(wf, "s", { version: 2 }), {
            items: ["apple", "pear"],
            total: 2
          })
          assert.deepStrictEqual(yield* Workflow.getSessionState(wf, "s", { version: 3 }), {
            items: ["apple", "pear"],
            total: 10
          })
          assert.deepStrictEqual(yield* Workflow.getSessionState(wf, "s"), { items: ["apple", "pear"], total: 10 })
          const missing = yield* Effect.flip(Workflow.getSessionState(wf, "s", { version: 4 }))
          assert.deepStrictEqual(missing._tag === "VersionNotFound" ? [missing.reason, missing.latest] : missing._tag, [
            "missing",
            3
          ])
        }).pipe(Effect.provide(layer)))
    }

    it.effect("the workflow's history option decides how many versions are kept", () =>
      Effect.gen(function*() {
        const wf = shop({ history: { keep: 2 } })
        for (const item of ["a", "b", "c", "d"]) yield* Workflow.run(wf, item, { sessionId: "k" })
        assert.deepStrictEqual((yield* Workflow.sessionVersions(wf, "k")).map((v) => v.version), [3, 4])
        const dropped = yield* Effect.flip(Workflow.getSessionState(wf, "k", { version: 2 }))
        assert.deepStrictEqual(dropped._tag === "VersionNotFound" ? dropped.reason : dropped._tag, "not-kept")
        const none = shop({ history: { keep: "none" } })
        yield* Workflow.run(none, "e", { sessionId: "k" })
        assert.deepStrictEqual(yield* Workflow.sessionVersions(none, "k"), [])
      }).pipe(Effect.provide(layer)))

    it.effect("a fork starts from a version; runs on the fork never touch the original, nor the other way round", () =>
      Effect.gen(function*() {
        const wf = shop()
        for (const item of ["a", "b", "c"]) yield* Workflow.run(wf, item, { sessionId: "orig", userId: "ann" })
        const fork = yield* Workflow.fork(wf, "orig", { atVersion: 2, newSessionId: "alt", userId: "ann" })
        assert.deepStrictEqual(fork, { sessionId: "alt", version: 2 })
        assert.deepStrictEqual(yield* Workflow.getSessionState(wf, "alt", { userId: "ann" }), {
          items: ["a", "b"],
          total: 2
        })
        yield* Workflow.run(wf, "x", { sessionId: "alt", userId: "ann" })
        yield* Workflow.run(wf, "d", { sessionId: "orig", userId: "ann" })
        assert.deepStrictEqual((yield* Workflow.getSessionState(wf, "alt", { userId: "ann" })).items, ["a", "b", "x"])
        assert.deepStrictEqual((yield* Workflow.getSessionState(wf, "orig", { userId: "ann" })).items, [
          "a",
          "b",
          "c",
          "d"
        ])
        assert.deepStrictEqual(
          (yield* Workflow.sessionVersions(wf, "alt", { userId: "ann" })).map((v) => v.version),
          [1, 2, 3]
        )
        assert.deepStrictEqual((yield* Workflow.getRunHistory(wf, "alt", { userId: "ann" })).map((r) => r.input), ["x"])
        // the owner's only: another user cannot fork it
        const stranger = yield* Effect.flip(Workflow.fork(wf, "orig", { newSessionId: "mine", userId: "bob" }))
        assert.strictEqual(stranger._tag, "SessionOwnershipError")
        // a taken id, a bad id
        assert.strictEqual(
          (yield* Effect.flip(Workflow.fork(wf, "orig", { newSessionId: "alt", userId: "ann" })))._tag,
          "SessionExists"
        )
        assert.strictEqual(
          (yield* Effect.flip(Workflow.fork(wf, "orig", { newSessionId: "", userId: "ann" })))._tag,
          "InvalidSessionId"
        )
        // by default, from the current version, under a new id
        const latest = yield* Workflow.fork(wf, "orig", { userId: "ann" })
        assert.strictEqual(latest.version, 4)
        assert.notStrictEqual(latest.sessionId, "orig")
      }).pipe(Effect.provide(layer)))

    it.effect("a fork from a paused run's point continues differently, the original run still waits", () =>
      Effect.gen(function*() {
        const first = yield* Effect.flip(Workflow.run(approvals, "tea", { sessionId: "p" }))
        assert(first._tag === "RunPaused")
        yield* Workflow.continue(approvals, first.runId, { approved: true })
        const asked = yield* Effect.flip(Workflow.run(approvals, "cake", { sessionId: "p" }))
        assert(asked._tag === "RunPaused")
        const fork = yield* Workflow.fork(approvals, "p", { atRun: asked.runId, newSessionId: "p-fork" })
        assert.isString(fork.runId)
        assert.notStrictEqual(fork.runId, asked.runId)
        const [copy] = yield* Workflow.pausedRuns(approvals, { sessionId: "p-fork" })
        assert.deepStrictEqual([copy?.runId, copy?.pause?.payload], [fork.runId, "buy cake?"])
        // the fork approves, the original rejects
        const approved = yield* Workflow.continue(approvals, fork.runId!, { approved: true })
        assert.strictEqual(approved.content, "approved")
        assert.deepStrictEqual((yield* Workflow.getSessionState(approvals, "p-fork")).items, ["tea", "cake"])
        assert.deepStrictEqual((yield* Workflow.getSessionState(approvals, "p")).items, ["tea"])
        const rejected = yield* Workflow.continue(approvals, asked.runId, { approved: false })
        assert.strictEqual(rejected.content, "rejected")
        assert.deepStrictEqual((yield* Workflow.getSessionState(approvals, "p")).items, ["tea"])
        assert.deepStrictEqual((yield* Workflow.getSessionState(approvals, "p-fork")).items, ["tea", "cake"])
        // a run that is not paused there is refused
        const notPaused = yield* Effect.flip(Workflow.fork(approvals, "p", { atRun: asked.runId, newSessionId: "p2" }))
        assert.strictEqual(notPaused._tag, "RunNotFound")
      }).pipe(Effect.provide(layer)))
  })
}
