/**
 * The deployment of the example (`packages/examples/src/Cluster.ts`), with
 * the test's workflows: three runner processes (`fixtures/runner.ts`) and two
 * stateless HTTP server processes in front (`fixtures/server.ts`, cluster
 * clients), on a fresh PostgreSQL database. Runs posted to both servers at
 * once, on one hot session and on many sessions, never conflict and are
 * never lost: each applied once. A runner killed with SIGKILL in the middle
 * of durable runs posted to the servers: every run completes, answered by
 * the server it was posted to; no completed step runs twice.
 */
import { describe, expect, it } from "@effect/vitest"
import { Workflow } from "@sessionflow/core"
import { Effect } from "effect"
import { processExists } from "../store-sqlite/processes.js"
import { counter, layers } from "./fixtures/cluster.js"
import { checkSteps, cluster, killMidRun, lines, servers } from "./runners.js"

interface Answer {
  readonly status: number
  readonly body: {
    readonly content?: unknown
    readonly runId?: string
    readonly state?: unknown
    readonly error?: unknown
  }
  readonly at: number
}

/** `POST <server>/workflows/<workflow>/runs` with a JSON body: the status, the body and when it came. */
const post = (server: string, workflow: string, body: object) =>
  Effect.promise(async (): Promise<Answer> => {
    const response = await fetch(`${server}/workflows/${workflow}/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    const text = await response.text()
    const answer = (text.startsWith("{") ? JSON.parse(text) : { error: text }) as Answer["body"]
    return { status: response.status, body: answer, at: Date.now() }
  })

describe("a cluster of runner processes behind two HTTP servers on PostgreSQL", () => {
  it.live(
    "runs posted to both servers on one hot session and on 40 other " +
      "sessions at once: none conflicts, none is lost, each applied once",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const { database, effects } = yield* cluster
        const [a, b] = (yield* servers(database, effects, 2)) as [string, string]
        const hot = `hot-${crypto.randomUUID()}`
        const others = Array.from({ length: 40 }, (_, i) => `s${i}-${crypto.randomUUID()}`)
        // 24 runs on the hot session, 2 on each of the others (one through each server), all at once
        const posts = [
          ...Array.from(
            { length: 24 },
            (_, i) => ({ server: i % 2 === 0 ? a : b, sessionId: hot, input: `${hot}#${i}` })
          ),
          ...others.flatMap((sessionId) => [
            { server: a, sessionId, input: `${sessionId}#a` },
            { server: b, sessionId, input: `${sessionId}#b` }
          ])
        ]
        const answers = yield* Effect.forEach(posts, ({ input, server, sessionId }) =>
          post(server, "counter", { input, sessionId }), {
          concurrency: "unbounded"
        })
        expect(
          answers.filter((answer) =>
            answer.status !== 200
          ).map((answer) => answer.body)
        ).toEqual([])
        const hotCounts = answers.slice(0, 24).map((answer) => answer.body.content as number).sort((x, y) => x - y)
        expect(hotCounts).toEqual(Array.from({ length: 24 }, (_, i) => i + 1))

        // each run's step ran once, on one runner per session
        const ran = lines(effects).map((line) => line.split(" ") as [string, string])
        const twice = ran.filter(([input], i) => ran.findIndex(([other]) => other === input) !== i)
        expect(twice.map(([input]) => ran.filter(([other]) => other === input).map((r) => r.join(" ")))).toEqual([])
        expect(ran.map(([input]) => input).sort()).toEqual(posts.map((p) => p.input).sort())
        for (const sessionId of [hot, ...others]) {
          expect(
            new Set(ran.filter(([input]) => input.startsWith(`${sessionId}#`)).map(([, pid]) => pid)).size,
            sessionId
          ).toBe(1)
        }
        // and the sessions' states have every run once
        const wf = counter(effects)
        const states = yield* Effect.forEach([hot, ...others], (sessionId) => Workflow.getSessionState(wf, sessionId))
          .pipe(
            Effect.provide(layers(database).store)
          )
        expect([...states[0]!.inputs].sort()).toEqual(posts.slice(0, 24).map((p) => p.input).sort())
        expect(states[0]!.count).toBe(24)
        for (const [i, sessionId] of others.entries()) {
          expect([...states[i + 1]!.inputs].sort(), sessionId).toEqual([`${sessionId}#a`, `${sessionId}#b`])
        }
      })),
    180_000
  )

  it.live(
    "a runner killed in the middle of durable runs posted to the " +
      "servers: every run completes through them, no completed step ran twice",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const { database, effects, runners } = yield* cluster
        const [a, b] = (yield* servers(database, effects, 2)) as [string, string]
        const runs = Array.from({ length: 9 }, (_, i) => ({
          server: i % 2 === 0 ? a : b,
          sessionId: `s${i}-${crypto.randomUUID()}`,
          runId: `r${i}-${crypto.randomUUID()}`
        }))
        const answers = yield* Effect.forEach(runs, ({ runId, server, sessionId }) =>
          Effect.fork(post(server, "durable", { input: null, sessionId, runId })))
        const { interrupted, killedAt, pid, victim } = yield* killMidRun(effects, runners)
        expect(processExists(pid)).toBe(false)
        expect(interrupted.size).toBeGreaterThan(0)

        const results = yield* Effect.forEach(answers, (fiber) =>
          fiber.await.pipe(Effect.flatten))
        for (const [i, answer] of results.entries()) {
          expect(answer.status, JSON.stringify(answer.body)).toBe(200)
          expect(answer.body.runId).toBe(runs[i]!.runId)
          expect(answer.body.content).toBe(4)
          expect(answer.body.state).toEqual({ items: ["1", "2", "3", "4"] })
        }
        checkSteps(effects, runs.map((r) => r.runId), victim)
        // the bound: the tuned cluster intervals, plus the runs' default 10 s lease the new owner waits out
        const failover = Math.max(
          ...results.filter((answer) => interrupted.has(answer.body.runId!)).map((answer) => answer.at)
        ) - killedAt
        console.log(`failover through the HTTP servers: the interrupted runs completed ${failover} ms after the kill`)
        expect(failover).toBeLessThan(30_000)
      })),
    180_000
  )
})
