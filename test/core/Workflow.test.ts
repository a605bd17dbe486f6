import { assert, describe, expect, it } from "@effect/vitest"
import { SessionState, SessionStore, Step, Workflow } from "@sessionflow/core"
import { Cause, Deferred, Effect, Exit, Fiber, Option, Schema, TestClock, Tracer } from "effect"
import { append, Boom, Items, itemsWorkflow, memory } from "./utils.js"

// The numbers are those of the semantics in the README; 3 (one shared state) is tested in
// SessionState.test.ts and Parallel.test.ts, 7 (events) in WorkflowEvent.test.ts.
describe("Workflow", () => {
  describe("1. session identity", () => {
    it.effect("uses the run's sessionId, else the workflow's, else a new UUID returned in the output", () =>
      Effect.gen(function*() {
        const wf = itemsWorkflow([append("a")])
        const explicit = yield* Workflow.run(wf, "x", { sessionId: "given" })
        expect(explicit.sessionId).toBe("given")

        const fixed = Workflow.make({ name: "fixed", sessionId: "fixed-session", steps: [] })
        expect((yield* Workflow.run(fixed, "x")).sessionId).toBe("fixed-session")

        const generated = yield* Workflow.run(wf, "x")
        expect(generated.sessionId).toMatch(/^[0-9a-f-]{36}$/)
        const state = yield* Workflow.getSessionState(wf, generated.sessionId)
        expect(state.items).toEqual(["a"])
      }).pipe(memory))

    it.effect("a session records its user; another user may not read or write it", () =>
      Effect.gen(function*() {
        const wf = itemsWorkflow([append("a")])
        yield* Workflow.run(wf, "x", { sessionId: "owned", userId: "alice" })
        const runAsBob = yield* Effect.flip(Workflow.run(wf, "x", { sessionId: "owned", userId: "bob" }))
        assert(runAsBob._tag === "SessionOwnershipError")
        expect(runAsBob.ownerId).toBe("alice")
        const readAsBob = yield* Effect.flip(Workflow.getSessionState(wf, "owned", { userId: "bob" }))
        expect(readAsBob._tag).toBe("SessionOwnershipError")
        const readAnonymously = yield* Effect.flip(Workflow.getSessionState(wf, "owned"))
        expect(readAnonymously._tag).toBe("SessionOwnershipError")
        expect((yield* Workflow.getSessionState(wf, "owned", { userId: "alice" })).items).toEqual(["a"])
        const { sessions } = yield* Workflow.listSessions(wf, { userId: "alice" })
        expect(sessions.map((s) => [s.sessionId, s.userId])).toEqual([["owned", "alice"]])
      }).pipe(memory))
  })

  describe("2. state per run", () => {
    it.effect("a new session starts from a deep copy of the seed", () =>
      Effect.gen(function*() {
        const seed = { nested: { list: [] as Array<string> } }
        const push = Step.make("push", () =>
          SessionState.update((s) => {
            // a careless step mutating in place must not leak into the seed or other sessions
            ;(s.nested as { list: Array<string> }).list.push("x")
            return { ...s }
          }))
        const wf = Workflow.make({ name: "seeded", sessionState: seed, steps: [push] })
        yield* Workflow.run(wf, "1", { sessionId: "s1" })
        yield* Workflow.run(wf, "1", { sessionId: "s2" })
        expect(seed.nested.list).toEqual([])
        expect(yield* Workflow.getSessionState(wf, "s1")).toEqual({ nested: { list: ["x"] } })
        expect(yield* Workflow.getSessionState(wf, "s2")).toEqual({ nested: { list: ["x"] } })
      }).pipe(memory))

    it.effect("the stored state wins over the seed; the run's sessionState is deep-merged over it", () =>
      Effect.gen(function*() {
        const wf = Workflow.make({
          name: "merge",
          sessionState: { settings: { theme: "light", lang: "en" }, tags: ["a"], count: 0 },
          steps: [Step.make("count", () => SessionState.update((s) => ({ ...s, count: (s.count as number) + 1 })))]
        })
        yield* Workflow.run(wf, "x", { sessionId: "m" })
        yield* Workflow.run(wf, "x", { sessionId: "m" })
        expect(yield* Workflow.getSessionState(wf, "m")).toEqual({
          settings: { theme: "light", lang: "en" },
          tags: ["a"],
          count: 2
        })
        yield* Workflow.run(wf, "x", {
          sessionId: "m",
          sessionState: { settings: { theme: "dark" }, tags: ["b", "c"] }
        })
        expect(yield* Workflow.getSessionState(wf, "m")).toEqual({
          settings: { theme: "dark", lang: "en" },
          tags: ["b", "c"],
          count: 3
        })
      }).pipe(memory))

    it.effect("overwriteDbSessionState replaces the stored state with the run's state, else the seed", () =>
      Effect.gen(function*() {
        const wf = itemsWorkflow([append("a")])
        yield* Workflow.run(wf, "x", { sessionId: "o" })
        yield* Workflow.run(wf, "x", { sessionId: "o" })
        expect((yield* Workflow.getSessionState(wf, "o")).items).toEqual(["a", "a"])
        yield* Workflow.run(wf, "x", { sessionId: "o", overwriteDbSessionState: true, sessionState: { items: ["z"] } })
        expect((yield* Workflow.getSessionState(wf, "o")).items).toEqual(["z", "a"])
        const always = Workflow.make({
          name: "items",
          state: Items,
          sessionState: { items: ["seed"] },
          overwriteDbSessionState: true,
          steps: [append("a")]
        })
        yield* Workflow.run(always, "x", { sessionId: "o" })
        expect((yield* Workflow.getSessionState(wf, "o")).items).toEqual(["seed", "a"])
      }).pipe(memory))

    it.effect(
      "a stored state that fails the Schema is a typed error naming the session, and nothing is overwritten",
      () =>
        Effect.gen(function*() {
          const untyped = Workflow.make({ name: "items", sessionState: { items: [1, 2] }, steps: [] })
          yield* Workflow.run(untyped, "x", { sessionId: "bad" })
          const wf = itemsWorkflow([append("a")])
          const error = yield* Effect.flip(Workflow.run(wf, "x", { sessionId: "bad" }))
          assert(error._tag === "StateDecodeError")
          expect(error.sessionId).toBe("bad")
          expect(error.reason).toBe("schema")
          expect(error.message).toContain("bad")
          expect(yield* Workflow.getSessionState(untyped, "bad")).toEqual({ items: [1, 2] })
        }).pipe(memory)
    )

    it.effect(
      "a run that leaves something other than a JSON object as the untyped state fails and commits nothing",
      () =>
        Effect.gen(function*() {
          const wf = Workflow.make({ name: "obj", sessionState: { n: 1 }, steps: [] })
          yield* Workflow.run(wf, "x", { sessionId: "obj" })
          const breaks = Workflow.make({
            name: "obj",
            steps: [Step.make("break", () => SessionState.set(null as unknown as SessionState.State))]
          })
          const error = yield* Effect.flip(Workflow.run(breaks, "x", { sessionId: "obj" }))
          assert(error._tag === "StateDecodeError")
          expect(error.sessionId).toBe("obj")
          expect(yield* Workflow.getSessionState(wf, "obj")).toEqual({ n: 1 })
        }).pipe(memory)
    )

    it.effect("Schema defaults fill fields missing from a stored state", () =>
      Effect.gen(function*() {
        class V2 extends SessionState.Tag("test/V2")<V2>()({
          items: Schema.Array(Schema.String),
          label: Schema.optionalWith(Schema.String, { default: () => "none" })
        }) {}
        const v1 = Workflow.make({ name: "v", sessionState: { items: ["old"] }, steps: [] })
        yield* Workflow.run(v1, "x", { sessionId: "v" })
        const v2 = Workflow.make({
          name: "v",
          state: V2,
          sessionState: { items: [] },
          steps: [Step.make("read", () => V2.get.pipe(Effect.map((s) => `${s.label}:${s.items.join(",")}`)))]
        })
        const out = yield* Workflow.run(v2, "x", { sessionId: "v" })
        expect(out.content).toBe("none:old")
        expect(yield* Workflow.getSessionState(v1, "v")).toEqual({ items: ["old"], label: "none" })
      }).pipe(memory))
  })

  describe("4. atomic runs", () => {
    it.effect("a failing run commits no state change but keeps its run record", () =>
      Effect.gen(function*() {
        const fail = Step.make("fail", () => Effect.fail(new Boom({ reason: "no" })))
        const ok = itemsWorkflow([append("a")])
        const failing = Workflow.make({
          name: "items",
          state: Items,
          sessionState: { items: [] },
          steps: [append("b"), fail]
        })
        yield* Workflow.run(ok, "1", { sessionId: "atomic" })
        const error = yield* Effect.flip(Workflow.run(failing, "2", { sessionId: "atomic" }))
        expect(error).toBeInstanceOf(Boom)
        expect((yield* Workflow.getSessionState(ok, "atomic")).items).toEqual(["a"])
        const history = yield* Workflow.getRunHistory(ok, "atomic")
        expect(history.map((r) => r.status)).toEqual(["completed", "error"])
        expect(history[1]!.error).toContain("no")
        expect(history[1]!.input).toBe("2")
      }).pipe(memory))

    it.effect("a failing first run creates the session with its initial state and records the run", () =>
      Effect.gen(function*() {
        const failing = Workflow.make({
          name: "items",
          state: Items,
          sessionState: { items: ["seed"] },
          steps: [append("b"), Step.make("fail", () => Effect.fail(new Boom({ reason: "first" })))]
        })
        yield* Effect.flip(Workflow.run(failing, "1", { sessionId: "first-fails" }))
        expect((yield* Workflow.getSessionState(failing, "first-fails")).items).toEqual(["seed"])
        expect((yield* Workflow.getRunHistory(failing, "first-fails")).map((r) => r.status)).toEqual(["error"])
      }).pipe(memory))

    it.effect("an interrupted run commits no state change and is recorded as cancelled", () =>
      Effect.gen(function*() {
        const started = yield* Deferred.make<void>()
        const wf = itemsWorkflow([
          append("a"),
          Step.make("wait", () => Effect.zipRight(Deferred.succeed(started, undefined), Effect.never))
        ])
        yield* Workflow.run(itemsWorkflow([append("z")]), "0", { sessionId: "cancel" })
        const fiber = yield* Effect.fork(Workflow.run(wf, "1", { sessionId: "cancel" }))
        yield* Deferred.await(started)
        yield* Fiber.interrupt(fiber)
        expect((yield* Workflow.getSessionState(wf, "cancel")).items).toEqual(["z"])
        const history = yield* Workflow.getRunHistory(wf, "cancel")
        expect(history.map((r) => r.status)).toEqual(["completed", "cancelled"])
      }).pipe(memory))
  })

  describe("5. concurrent runs on one session", () => {
    it.effect("two concurrent runs in one process both land, one after the other", () =>
      Effect.gen(function*() {
        const slow = (item: string) =>
          Step.make(`slow-${item}`, () =>
            Effect.gen(function*() {
              const s = yield* Items.get
              yield* Effect.sleep("1 second")
              yield* Items.set({ items: [...s.items, item] })
            }))
        const wf = (item: string) => itemsWorkflow([slow(item)])
        const a = yield* Effect.fork(Workflow.run(wf("a"), "a", { sessionId: "two" }))
        const b = yield* Effect.fork(Workflow.run(wf("b"), "b", { sessionId: "two" }))
        yield* TestClock.adjust("1 second")
        yield* TestClock.adjust("1 second")
        yield* Fiber.join(a)
        yield* Fiber.join(b)
        expect([...(yield* Workflow.getSessionState(wf("a"), "two")).items].sort()).toEqual(["a", "b"])
      }).pipe(memory))

    it.effect(
      "a step that runs a workflow on its own session dies with a clear message instead of waiting for ever",
      () =>
        Effect.gen(function*() {
          const inner = itemsWorkflow([append("inner")])
          const outer = itemsWorkflow([Step.make("nested", () => Workflow.run(inner, "x", { sessionId: "self" }))])
          const exit = yield* Effect.exit(Workflow.run(outer, "x", { sessionId: "self" }))
          assert(Exit.isFailure(exit))
          expect(Cause.pretty(exit.cause)).toContain("session 'self' is already locked by this run")
          // another session is fine
          const other = itemsWorkflow([Step.make("nested", () => Workflow.run(inner, "x", { sessionId: "other" }))])
          yield* Workflow.run(other, "x", { sessionId: "outer" })
          expect((yield* Workflow.getSessionState(inner, "other")).items).toEqual(["inner"])
        }).pipe(memory)
    )

    it.effect(
      "a commit based on a stale version fails with SessionConflict and writes nothing; retryOnConflict re-runs it",
      () =>
        Effect.gen(function*() {
          // two stores over one backend = two processes over one database (no shared in-process lock)
          const backend = SessionStore.makeMemoryBackend()
          const processA = SessionStore.make(backend)
          const processB = SessionStore.make(backend)
          const wf = (item: string, gate?: Deferred.Deferred<void>) =>
            itemsWorkflow([
              Step.make(`append-${item}`, () =>
                Effect.gen(function*() {
                  if (gate !== undefined) yield* Deferred.await(gate)
                  yield* Items.update((s) => ({ items: [...s.items, item] }))
                }))
            ])
          yield* Workflow.run(wf("seed"), "0", { sessionId: "x" }).pipe(
            Effect.provideService(SessionStore.SessionStore, processA)
          )

          const gate = yield* Deferred.make<void>()
          const slowA = yield* Effect.fork(
            Workflow.run(wf("a", gate), "a", { sessionId: "x" }).pipe(
              Effect.provideService(SessionStore.SessionStore, processA)
            )
          )
          yield* Effect.yieldNow()
          yield* Workflow.run(wf("b"), "b", { sessionId: "x" }).pipe(
            Effect.provideService(SessionStore.SessionStore, processB)
          )
          yield* Deferred.succeed(gate, undefined)
          const exit = yield* Fiber.await(slowA)
          assert(Exit.isFailure(exit))
          const error = Cause.failureOption(exit.cause)
          assert(Option.isSome(error) && error.value._tag === "SessionConflict")
          expect(error.value.expectedVersion).toBe(1)
          expect(error.value.actualVersion).toBe(2)
          const state = yield* Workflow.getSessionState(wf("a"), "x").pipe(
            Effect.provideService(SessionStore.SessionStore, processA)
          )
          expect(state.items).toEqual(["seed", "b"])

          const gate2 = yield* Deferred.make<void>()
          let attempts = 0
          const counted = itemsWorkflow([
            Step.make("append-c", () =>
              Effect.gen(function*() {
                attempts++
                if (attempts === 1) yield* Deferred.await(gate2)
                yield* Items.update((s) => ({ items: [...s.items, "c"] }))
              }))
          ])
          const retrying = yield* Effect.fork(
            Workflow.run(counted, "c", { sessionId: "x", retryOnConflict: true }).pipe(
              Effect.provideService(SessionStore.SessionStore, processA)
            )
          )
          yield* Effect.yieldNow()
          yield* Workflow.run(wf("d"), "d", { sessionId: "x" }).pipe(
            Effect.provideService(SessionStore.SessionStore, processB)
          )
          yield* Deferred.succeed(gate2, undefined)
          const landed = yield* Fiber.join(retrying)
          expect(attempts).toBe(2)
          expect(landed.state.items).toEqual(["seed", "b", "d", "c"])
          const history = yield* processA.runs("x", {})
          expect(history.map((r) => [r.input, r.status])).toEqual([
            ["0", "completed"],
            ["b", "completed"],
            ["a", "error"],
            ["d", "completed"],
            ["c", "completed"]
          ])
        })
    )
  })

  describe("6. failures are typed", () => {
    it.effect("a failing step fails the run with its own typed error", () =>
      Effect.gen(function*() {
        const wf = Workflow.make({
          name: "typed",
          steps: [Step.make("boom", () => Effect.fail(new Boom({ reason: "typed" })))]
        })
        const result = yield* Workflow.run(wf, "x").pipe(
          Effect.catchTag("Boom", (e) => Effect.succeed(`caught ${e.reason}`))
        )
        expect(result).toBe("caught typed")
      }).pipe(memory))
  })

  describe("tracing", () => {
    it.effect("with a tracer installed, a run is a Workflow.run span, each step a Workflow.step span under it", () =>
      Effect.gen(function*() {
        const native = yield* Effect.tracer
        const spans: Array<readonly [string, string | undefined]> = []
        const tracer = Tracer.make({
          span: (name, parent, context, links, startTime, kind, options) => {
            const parentName = Option.match(parent, {
              onNone: () => undefined,
              onSome: (p) => p._tag === "Span" ? p.name : "external"
            })
            spans.push([name, parentName])
            return native.span(name, parent, context, links, startTime, kind, options)
          },
          context: (f) => f()
        })
        const wf = itemsWorkflow([append("a"), Step.make("traced", () => Effect.withSpan(Effect.void, "step work"))])
        const out = yield* Workflow.run(wf, "x").pipe(Effect.withTracer(tracer))
        expect(out.state.items).toEqual(["a"])
        expect(spans.map(([name]) => name)).toContain("Workflow.run")
        expect(spans).toContainEqual(["Workflow.step", "Workflow.run"])
        expect(spans).toContainEqual(["step work", "Workflow.step"])
      }).pipe(memory))
  })

  describe("session API", () => {
    it.effect("unknown sessions are a typed error", () =>
      Effect.gen(function*() {
        const wf = itemsWorkflow([])
        const error = yield* Effect.flip(Workflow.getSessionState(wf, "missing"))
        assert(error._tag === "SessionNotFound")
        expect(error.message).toBe("Session 'missing' does not exist")
        expect((yield* Effect.flip(Workflow.setSessionName(wf, "missing", "n")))._tag).toBe("SessionNotFound")
        expect((yield* Effect.flip(Workflow.deleteSession(wf, "missing")))._tag).toBe("SessionNotFound")
      }).pipe(memory))

    it.effect("updateSessionState, names, listing, deletion and run history", () =>
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.UTC(2026, 10, 29, 9, 30))
        const wf = Workflow.make({
          name: "items",
          description: "Collects items",
          state: Items,
          sessionState: { items: [] },
          steps: [append("a")]
        })
        yield* Workflow.run(wf, "first input", { sessionId: "api" })
        yield* Workflow.run(wf, "second input", { sessionId: "api" })
        const updated = yield* Workflow.updateSessionState(wf, "api", (s) => ({ items: [...s.items, "manual"] }))
        expect(updated.items).toEqual(["a", "a", "manual"])
        expect((yield* Workflow.getSessionState(wf, "api")).items).toEqual(["a", "a", "manual"])

        expect(yield* Workflow.getSessionName(wf, "api")).toEqual(Option.none())
        expect(yield* Workflow.setSessionName(wf, "api", "My items")).toBe("My items")
        expect(yield* Workflow.getSessionName(wf, "api")).toEqual(Option.some("My items"))
        const generated = yield* Workflow.setSessionName(wf, "api", { autogenerate: true })
        expect(generated).toBe("Collects items - 2026-11-29 09:30")
        expect((yield* Workflow.getSession(wf, "api")).name).toBe(generated)

        const history = yield* Workflow.getRunHistory(wf, "api")
        expect(history.map((r) => r.input)).toEqual(["first input", "second input"])
        expect((yield* Workflow.getRunHistory(wf, "api", { limit: 1 })).map((r) => r.input)).toEqual(["second input"])

        yield* Workflow.run(wf, "x", { sessionId: "other" })
        expect((yield* Workflow.listSessions(wf)).sessions.map((s) => s.sessionId).sort()).toEqual(["api", "other"])
        yield* Workflow.deleteSession(wf, "api")
        expect((yield* Workflow.listSessions(wf)).sessions.map((s) => s.sessionId)).toEqual(["other"])
        expect((yield* Effect.flip(Workflow.getSessionState(wf, "api")))._tag).toBe("SessionNotFound")
      }).pipe(memory))

    it.effect(
      "listSessions pages by keyset: limit and after (the next of the " +
        "page before), each session once, in order, while sessions are added",
      () =>
        Effect.gen(function*() {
          const wf = itemsWorkflow([append("a")])
          // 7 sessions, one a second; s3 updated last
          for (let i = 0; i < 7; i++) {
            yield* TestClock.adjust("1 second")
            yield* Workflow.run(wf, "x", { sessionId: `s${i}` })
          }
          yield* TestClock.adjust("1 second")
          yield* Workflow.run(wf, "x", { sessionId: "s3" })
          const pages: Array<ReadonlyArray<string>> = []
          let after: SessionStore.SessionCursor | undefined
          do {
            const page = yield* Workflow.listSessions(wf, { limit: 3, after })
            pages.push(page.sessions.map((s) => s.sessionId))
            after = page.next
            // a session made between pages is newer than the cursor: not met on the way
            yield* TestClock.adjust("1 second")
            yield* Workflow.run(wf, "x", { sessionId: `new-${pages.length}` })
          } while (after !== undefined)
          expect(pages).toEqual([["s3", "s6", "s5"], ["s4", "s2", "s1"], ["s0"]])
          // the time filter, with a page
          const recent = yield* Workflow.listSessions(wf, { updatedSince: 7_000, limit: 2 })
          expect(recent.sessions.map((s) => s.sessionId)).toEqual(["new-3", "new-2"])
          expect(recent.next).toBeDefined()
          const rest = yield* Workflow.listSessions(wf, { updatedSince: 7_000, after: recent.next })
          expect([rest.sessions.map((s) => s.sessionId), rest.next]).toEqual([["new-1", "s3", "s6"], undefined])
          // a search, by the store
          expect((yield* Workflow.listSessions(wf, { search: "NEW-", limit: 2 })).sessions.map((s) => s.sessionId))
            .toEqual(["new-3", "new-2"])
        }).pipe(memory)
    )
  })
})
