/**
 * Owner ids of stores: they name the host and the process (`<host>:<pid>:<uuid>`),
 * and a process tells whether the owner of a run is a process of its own
 * host that no longer exists (a process that ran and exited), never for an
 * owner of another host, a living process, itself, or an id it cannot read.
 * And the rule every store keeps: a claim naming the run's current owner
 * (`from`) takes a running run whatever its lease; of two such claims one wins.
 * A continue that a gone process was running is carried on by a retry of it,
 * or a resume, with the answer that process recorded with the pause.
 */
import { assert, describe, it } from "@effect/vitest"
import { SessionStore, Step, Workflow } from "@sessionflow/core"
import { Effect, Option, Schema } from "effect"
import { spawn, spawnSync } from "node:child_process"
import * as owners from "../../packages/core/src/internal/store/owner.js"

/** The pid of a process that ran and has exited (waited for: no such process any more). */
const exitedPid = (): number => {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" })
  const pid = Number(child.stdout)
  assert.isTrue(Number.isSafeInteger(pid) && pid > 0, child.stdout)
  return pid
}

describe("owner ids", () => {
  it("a store's owner names this host and this process, unique per store", () => {
    const a = SessionStore.make(SessionStore.makeMemoryBackend()).owner
    const b = SessionStore.make(SessionStore.makeMemoryBackend()).owner
    assert.notStrictEqual(a, b)
    const parsed = owners.parse(a)
    assert.isDefined(parsed)
    assert.strictEqual(parsed!.pid, process.pid)
    assert.strictEqual(parsed!.host, owners.thisHost())
    assert.deepStrictEqual(owners.parse(b)?.host, parsed!.host)
  })

  it("parses `<host>:<pid>:<uuid>`; an id of another form names no process", () => {
    assert.deepStrictEqual(owners.parse("vm+4026531836:1234:0f0e-aa"), {
      host: "vm+4026531836",
      pid: 1234,
      unique: "0f0e-aa"
    })
    // the host name is URI-encoded, so a colon in it cannot shift the fields
    assert.deepStrictEqual(owners.parse(`${encodeURIComponent("a:b")}:7:u`), { host: "a%3Ab", pid: 7, unique: "u" })
    for (
      const bad of [
        "",
        "1234-0f0e",
        "?:1234:u",
        "host:?:u",
        "host:0:u",
        "host:-3:u",
        "host:12a:u",
        "host:1234:",
        "host:99999999999:u"
      ]
    ) {
      assert.isUndefined(owners.parse(bad), bad)
    }
  })

  it(
    "an owner of this host whose process exited is gone; a living " +
      "one, this process, another host's, or an unreadable id is not",
    () => {
      const host = owners.thisHost()
      assert.isDefined(host)
      const dead = exitedPid()
      assert.isFalse(owners.processExists(dead))
      assert.isTrue(owners.gone(`${host}:${dead}:u`))
      assert.isTrue(SessionStore.ownerGone(`${host}:${dead}:u`))
      // the same dead pid on another host: its death cannot be seen from here
      assert.isFalse(owners.gone(`elsewhere:${dead}:u`))
      assert.isFalse(owners.gone(`${host}:${dead}:u`, "elsewhere"))
      // a process that still runs
      const living = spawn(process.execPath, ["-e", "setTimeout(() => {}, 30000)"], { stdio: "ignore" })
      try {
        assert.isTrue(owners.processExists(living.pid!))
        assert.isFalse(owners.gone(`${host}:${living.pid}:u`))
      } finally {
        living.kill("SIGKILL")
      }
      // this process, and ids naming no process
      assert.isFalse(owners.gone(`${host}:${process.pid}:u`))
      assert.isFalse(owners.gone(`${dead}-0f0e`))
      assert.isFalse(owners.gone(""))
    }
  )

  it.effect(
    "a run whose owner is gone is abandoned at once; one whose owner lives or is elsewhere only when its lease expired",
    () =>
      Effect.gen(function*() {
        const host = owners.thisHost()!
        const dead = exitedPid()
        const run = (owner: string, leaseExpiresAt: number): SessionStore.ActiveRun => ({
          runId: "r",
          sessionId: "s",
          workflowName: "w",
          status: "running",
          input: null,
          owner,
          leaseExpiresAt,
          baseVersion: 0,
          durability: "step",
          startedAt: 0,
          updatedAt: 0
        })
        assert.isTrue(SessionStore.isAbandoned(run(`${host}:${dead}:u`, 60_000), 1_000))
        assert.isFalse(SessionStore.isAbandoned(run(`${host}:${process.pid}:u`, 60_000), 1_000))
        assert.isFalse(SessionStore.isAbandoned(run(`elsewhere:${dead}:u`, 60_000), 1_000))
        assert.isTrue(SessionStore.isAbandoned(run(`elsewhere:${dead}:u`, 60_000), 60_001))
        assert.isFalse(SessionStore.isAbandoned({ ...run(`${host}:${dead}:u`, 0), status: "paused", owner: "" }, 1_000))
        // a retry by id of a run held by another host's live lease is refused, saying until when
        const workflow = Workflow.make({ name: "w", sessionState: {} })
        const store = yield* SessionStore.SessionStore
        yield* store.startRun(run(`elsewhere:${dead}:u`, Number.MAX_SAFE_INTEGER))
        const refused = yield* Effect.flip(Workflow.run(workflow, null, { sessionId: "s", runId: "r" }))
        assert.strictEqual(refused._tag, "RunInProgress")
        const still = yield* store.getRun("r")
        assert(Option.isSome(still) && still.value._tag === "Active")
        assert.strictEqual(still.value.run.owner, `elsewhere:${dead}:u`)
      }).pipe(Effect.provide(SessionStore.layerMemory))
  )
})

describe("a continue whose process is gone", () => {
  const approval = Workflow.make({ name: "approval", sessionState: {} }).pipe(
    Workflow.andThen(Step.pause("approve", {
      payload: Schema.String,
      response: Schema.Boolean,
      ask: () => Effect.succeed("approve?"),
      resume: (ok) => Effect.succeed(ok ? "approved" : "rejected")
    }))
  )

  /**
   * A run paused at its question, then taken from its pause by a continue of
   * a process of this host that has exited (as its claim leaves it), with the
   * answer it recorded, if any.
   */
  const takenByGone = (sessionId: string, recorded: boolean | undefined) =>
    Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      const paused = yield* Effect.flip(Workflow.run(approval, null, { sessionId }))
      assert(paused._tag === "RunPaused")
      const dead = `${owners.thisHost()!}:${exitedPid()}:u`
      const claimed = yield* store.claimRun(paused.runId, {
        owner: store.owner,
        now: 0,
        leaseExpiresAt: Number.MAX_SAFE_INTEGER
      })
      yield* store.updateRun(paused.runId, store.owner, {
        owner: dead,
        ...(recorded === undefined ? {} : { pause: { ...claimed.pause!, answer: { response: recorded } } })
      })
      return paused
    })

  it.effect("a retry of the continue carries the run on at once with the answer recorded, whatever its own", () =>
    Effect.gen(function*() {
      const paused = yield* takenByGone("s1", true)
      // naming another pause: refused, nothing changes
      const elsewhere = yield* Effect.flip(Workflow.continue(approval, paused.runId, false, { pause: "other" }))
      assert.strictEqual(elsewhere._tag, "PauseMismatch")
      const done = yield* Workflow.continue(approval, paused.runId, false, { pause: paused.key })
      assert.strictEqual(done.content, "approved")
      const ended = yield* Effect.flip(Workflow.continue(approval, paused.runId, false, { pause: paused.key }))
      assert.strictEqual(ended._tag, "RunEnded")
    }).pipe(Effect.provide(SessionStore.layerMemory)))

  it.effect("resume carries it on with the recorded answer too", () =>
    Effect.gen(function*() {
      const paused = yield* takenByGone("s2", false)
      const done = yield* Workflow.resume(approval, paused.runId)
      assert.strictEqual(done.content, "rejected")
    }).pipe(Effect.provide(SessionStore.layerMemory)))

  it.effect("with no answer recorded, a retry's answer is recorded and used; resume asks the question again", () =>
    Effect.gen(function*() {
      const first = yield* takenByGone("s3", undefined)
      const store = yield* SessionStore.SessionStore
      const done = yield* Workflow.continue(approval, first.runId, false)
      assert.strictEqual(done.content, "rejected")
      const second = yield* takenByGone("s4", undefined)
      const again = yield* Effect.flip(Workflow.resume(approval, second.runId))
      assert(again._tag === "RunPaused")
      assert.deepStrictEqual([again.runId, again.key], [second.runId, second.key])
      const waiting = yield* store.getRun(second.runId)
      assert(Option.isSome(waiting) && waiting.value._tag === "Active")
      assert.deepStrictEqual([waiting.value.run.status, waiting.value.run.pause?.answer], ["paused", undefined])
    }).pipe(Effect.provide(SessionStore.layerMemory)))

  it.effect("a continue of a run that a living process is continuing is refused as before", () =>
    Effect.gen(function*() {
      const store = yield* SessionStore.SessionStore
      const paused = yield* Effect.flip(Workflow.run(approval, null, { sessionId: "s5" }))
      assert(paused._tag === "RunPaused")
      yield* store.claimRun(paused.runId, { owner: store.owner, now: 0, leaseExpiresAt: Number.MAX_SAFE_INTEGER })
      const refused = yield* Effect.flip(Workflow.continue(approval, paused.runId, true, { pause: paused.key }))
      assert.strictEqual(refused._tag, "PauseMismatch")
      const unnamed = yield* Effect.flip(Workflow.continue(approval, paused.runId, true))
      assert.strictEqual(unnamed._tag, "RunNotFound")
    }).pipe(Effect.provide(SessionStore.layerMemory)))
})
