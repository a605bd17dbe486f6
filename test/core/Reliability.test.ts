/**
 * Bad input gets a clear, typed error and loses nothing: stored states that
 * do not fit, seeds and patches, session ids, values that are not JSON, and
 * the run records of runs that fail before their steps.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import { SessionState, SessionStore, Step, Workflow, WorkflowError } from "@sessionflow/core"
import { Effect, Option, Schema } from "effect"

class Items extends SessionState.Tag("reliability/Items")<Items>()({ items: Schema.Array(Schema.String) }) {}

const memory = Effect.provide(SessionStore.layerMemory)

const addItem = Step.make(
  "add",
  (input) => SessionState.update((s) => ({ ...s, items: [...(s.items as Array<unknown> ?? []), input.input] }))
)
const untyped = Workflow.make({ name: "untyped", sessionState: { items: [] }, steps: [addItem] })
const typed = Workflow.make({ name: "typed", state: Items, sessionState: { items: [] } }).pipe(
  Workflow.andThen("add", ({ input }) => Items.update((s) => ({ items: [...s.items, String(input)] })))
)

/** Writes a raw stored state, as a database edited by hand would hold it. */
const storeRaw = (sessionId: string, state: unknown) =>
  Effect.flatMap(
    SessionStore.SessionStore,
    (store) => store.commit({ sessionId, workflowName: "untyped", expectedVersion: 0, state })
  )

const storedState = (sessionId: string) =>
  Effect.flatMap(SessionStore.SessionStore, (store) => store.load(sessionId)).pipe(
    Effect.map(Option.map((s) => s.state))
  )

const history = (sessionId: string) => Effect.flatMap(SessionStore.SessionStore, (store) => store.runs(sessionId, {}))

describe("reliability", () => {
  describe("a stored state that is not an object is never replaced by a patch", () => {
    for (const bad of [null, [1, 2], 5]) {
      it.effect(
        `stored ${JSON.stringify(bad)}: StateDecodeError with and without a sessionState patch, nothing overwritten`,
        () =>
          Effect.gen(function*() {
            yield* storeRaw("bad", bad)
            const withPatch = yield* Effect.flip(
              Workflow.run(untyped, "x", { sessionId: "bad", sessionState: { items: ["patched"] } })
            )
            assert(withPatch._tag === "StateDecodeError")
            expect(withPatch.sessionId).toBe("bad")
            const without = yield* Effect.flip(Workflow.run(untyped, "x", { sessionId: "bad" }))
            expect(without._tag).toBe("StateDecodeError")
            const typedError = yield* Effect.flip(
              Workflow.run(typed, "x", { sessionId: "bad", sessionState: { items: ["patched"] } })
            )
            expect(typedError._tag).toBe("StateDecodeError")
            expect(yield* storedState("bad")).toEqual(Option.some(bad))
            // overwriting is the way to repair it
            const repaired = yield* Workflow.run(untyped, "x", {
              sessionId: "bad",
              overwriteDbSessionState: true,
              sessionState: { items: [] }
            })
            expect(repaired.state).toEqual({ items: ["x"] })
          }).pipe(memory)
      )
    }
  })

  it.effect("overwriteDbSessionState replaces the seed on a new session too (agno)", () =>
    Effect.gen(function*() {
      const seeded = Workflow.make({ name: "seeded", sessionState: { seed_field: 1, items: [] }, steps: [] })
      const first = yield* Workflow.run(seeded, "x", {
        sessionId: "new",
        overwriteDbSessionState: true,
        sessionState: { original_field: "kept" }
      })
      expect(first.state).toEqual({ original_field: "kept" })
      expect(yield* Workflow.getSessionState(seeded, "new")).toEqual({ original_field: "kept" })
      const again = yield* Workflow.run(seeded, "x", {
        sessionId: "new",
        overwriteDbSessionState: true,
        sessionState: { other_field: 2 }
      })
      expect(again.state).toEqual({ other_field: 2 })
      // without overwrite, a new session's seed gets the patch merged over it
      const merged = yield* Workflow.run(seeded, "x", { sessionId: "merged", sessionState: { extra: true } })
      expect(merged.state).toEqual({ seed_field: 1, items: [], extra: true })
    }).pipe(memory))

  describe("session ids", () => {
    for (
      const [sessionId, reason] of [["", "empty"], ["bad-\ud800-x", "malformed"], ["bad-\udc00", "malformed"]] as const
    ) {
      it.effect(
        `${JSON.stringify(sessionId)} is an InvalidSessionId ` +
          `(${reason}) for runs and session functions; nothing is stored`,
        () =>
          Effect.gen(function*() {
            const run = yield* Effect.flip(Workflow.run(untyped, "x", { sessionId }))
            assert(run._tag === "InvalidSessionId")
            expect(run.reason).toBe(reason)
            const read = yield* Effect.flip(Workflow.getSessionState(untyped, sessionId))
            expect(read._tag).toBe("InvalidSessionId")
            const named = yield* Effect.flip(Workflow.setSessionName(untyped, sessionId, "x"))
            expect(named._tag).toBe("InvalidSessionId")
            expect((yield* Workflow.listSessions(untyped)).sessions).toEqual([])
          }).pipe(memory)
      )
    }

    it.effect("well-formed ids round-trip exactly, astral characters included", () =>
      Effect.gen(function*() {
        const sessionId = "ok-😀-é-\u0301"
        yield* Workflow.run(untyped, "x", { sessionId })
        const [listed] = (yield* Workflow.listSessions(untyped)).sessions
        expect(listed!.sessionId).toBe(sessionId)
        expect((yield* Workflow.getSessionState(untyped, listed!.sessionId)).items).toEqual(["x"])
      }).pipe(memory))
  })

  describe("values that are not JSON are typed errors naming the path; nothing is written", () => {
    // each workflow behaves on the input "first" and misbehaves on "bad"
    const misbehaving = (name: string, bad: (s: SessionState.State) => unknown, where: "output" | "state") =>
      Workflow.make({
        name,
        steps: [Step.make("act", (input) =>
          input.input === "bad"
            ? where === "output" ? Effect.succeed(bad({})) : SessionState.update((s) => bad(s) as SessionState.State)
            : Effect.succeed("ok"))]
      })
    const cases: ReadonlyArray<readonly [string, Workflow.Any, unknown, string, string]> = [
      ["a function as input", untyped, { go: () => 1 }, "input", "input.go"],
      ["a symbol as input", untyped, Symbol("s"), "input", "input"],
      ["NaN in the input", untyped, { n: Number.NaN }, "input", "input.n"],
      [
        "a function as output",
        misbehaving("out", () => ({ callback: () => 1 }), "output"),
        "bad",
        "output",
        "output.callback"
      ],
      ["Infinity as output", misbehaving("inf", () => [1, Infinity], "output"), "bad", "output", "output[1]"],
      [
        "a Date in an untyped state",
        misbehaving("date", (s) => ({ ...s, when: new Date(0) }), "state"),
        "bad",
        "state",
        "state.when"
      ],
      [
        "a function in an untyped state",
        misbehaving("fn", (s) => ({ ...s, nested: { f: () => 1 } }), "state"),
        "bad",
        "state",
        "state.nested.f"
      ]
    ]
    for (const [title, wf, input, what, at] of cases) {
      it.effect(title, () =>
        Effect.gen(function*() {
          yield* Workflow.run(wf, "first", { sessionId: "s" })
          const before = yield* storedState("s")
          const error = yield* Effect.flip(Workflow.run(wf, input, { sessionId: "s" }))
          assert(error._tag === "NotSerializable", `expected NotSerializable, got ${error._tag}`)
          expect(error.what).toBe(what)
          expect(`${error.what}${error.path}`).toBe(at)
          if (error.path !== "") expect(error.message).toContain(`at ${at}`)
          expect(error.message).toContain("nothing was written to session 's'")
          expect(yield* storedState("s")).toEqual(before)
          const records = yield* history("s")
          expect(records.map((r) => r.status)).toEqual(["completed", "error"])
          expect(records[1]!.error).toMatch(/^NotSerializable: /)
          // an input that cannot be stored is recorded as null
          if (what === "input") expect(records[1]!.input).toBeNull()
        }).pipe(memory))
    }

    it.effect("a typed state may hold what its Schema encodes (Schema.Date)", () =>
      Effect.gen(function*() {
        class Dated extends SessionState.Tag("reliability/Dated")<Dated>()({ when: Schema.Date }) {}
        const wf = Workflow.make({ name: "dated", state: Dated, sessionState: { when: "1970-01-01T00:00:00.000Z" } })
          .pipe(
            Workflow.andThen("later", () => Dated.update(() => ({ when: new Date(86_400_000) })))
          )
        const run = yield* Workflow.run(wf, "x", { sessionId: "d" })
        expect(run.state.when).toBeInstanceOf(Date)
        expect(yield* storedState("d")).toEqual(Option.some({ when: "1970-01-02T00:00:00.000Z" }))
      }).pipe(memory))
  })

  describe("every failed run leaves a record, where it can", () => {
    it.effect("failures before the steps are recorded on an existing session, its state untouched", () =>
      Effect.gen(function*() {
        yield* Workflow.run(untyped, "ok", { sessionId: "s" })
        // the stored state does not fit the typed workflow's Schema
        const schema = yield* Effect.flip(
          Workflow.run(typed, "x", { sessionId: "s", sessionState: { items: [1] } as never })
        )
        expect(schema._tag).toBe("StateDecodeError")
        // a bad input
        const input = yield* Effect.flip(Workflow.run(untyped, { f: () => 1 }, { sessionId: "s" }))
        expect(input._tag).toBe("NotSerializable")
        const records = yield* history("s")
        expect(records.map((r) => [r.status, r.error?.split(":")[0]])).toEqual([
          ["completed", undefined],
          ["error", "StateDecodeError"],
          ["error", "NotSerializable"]
        ])
        expect(yield* storedState("s")).toEqual(Option.some({ items: ["ok"] }))
      }).pipe(memory))

    it.effect("a run on another user's session is refused and leaves nothing in it", () =>
      Effect.gen(function*() {
        yield* Workflow.run(untyped, "ok", { sessionId: "owned", userId: "alice" })
        const error = yield* Effect.flip(Workflow.run(untyped, "x", { sessionId: "owned", userId: "bob" }))
        expect(error._tag).toBe("SessionOwnershipError")
        expect((yield* history("owned")).length).toBe(1)
      }).pipe(memory))

    it.effect(
      "a run that fails before its steps on a new session creates nothing (no valid state to create it with)",
      () =>
        Effect.gen(function*() {
          const badSeed = Workflow.make({ name: "bad-seed", state: Items, sessionState: { items: [] } })
          const error = yield* Effect.flip(
            Workflow.run(badSeed, "x", { sessionId: "fresh", sessionState: { items: [1] } as never })
          )
          assert(error instanceof WorkflowError.StateDecodeError)
          expect(yield* storedState("fresh")).toEqual(Option.none())
        }).pipe(memory)
    )
  })
})
