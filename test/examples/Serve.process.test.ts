/**
 * `npm start -- serve`: every example workflow over HTTP on a SQLite file,
 * offline, its URL printed; a run over HTTP is stored in the file; a run in
 * the file whose process died is resumed by the server.
 */
import { describe, expect, it } from "@effect/vitest"
import { SessionStore } from "@sessionflow/core"
import { Cli, ShoppingList } from "@sessionflow/examples"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Effect, Option, Schedule } from "effect"
import { spawn } from "node:child_process"
import { root } from "../process.js"
import { tempDb } from "./utils.js"

interface Served {
  readonly url: string
  readonly output: () => string
  readonly pid: number
}

/** `npm start -- serve …` in its own process group (npm, tsx and node), stopped with the scope. */
const serve = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  Effect.acquireRelease(
    Effect.async<Served, Error>((resume) => {
      const child = spawn("npm", ["start", "--", "serve", ...args], {
        cwd: root,
        env: { ...process.env, OPENAI_API_KEY: "", NO_COLOR: "1", SESSIONFLOW_TOKEN: "", ...env },
        stdio: ["ignore", "pipe", "pipe"],
        detached: true
      })
      let output = ""
      const onData = (chunk: Buffer) => {
        output += chunk.toString("utf8")
        const match = /sessionflow server: (http:\/\/\S+)/.exec(output)
        if (match !== null) resume(Effect.succeed({ url: match[1]!, output: () => output, pid: child.pid! }))
      }
      child.stdout.on("data", onData)
      child.stderr.on("data", onData)
      child.on("exit", (code) => resume(Effect.fail(new Error(`npm start -- serve exited with ${code}:\n${output}`))))
    }),
    (served) =>
      Effect.sync(() => {
        try {
          process.kill(-served.pid, "SIGTERM")
        } catch {
          // already gone
        }
      })
  )

/** The server's output once it has printed `text` (it goes on printing after its address): waited for, up to 10 s. */
const printed = (server: Served, text: string) =>
  Effect.suspend(() =>
    server.output().includes(text) ? Effect.succeed(server.output()) : Effect.fail("not yet" as const)
  ).pipe(
    Effect.retry(Schedule.intersect(Schedule.spaced("50 millis"), Schedule.recurs(200))),
    Effect.orElseSucceed(() => server.output())
  )

describe("npm start -- serve", () => {
  it.scoped(
    "serves every example workflow offline, prints its URL, and stores runs in the --db file",
    () =>
      Effect.gen(function*() {
        const db = yield* tempDb("server.db")
        const server = yield* serve(["--port", "0", "--db", db])
        expect(server.output()).toContain("Offline mode")
        expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)

        const workflows = yield* Effect.promise(() => fetch(`${server.url}/workflows`).then((r) => r.json()))
        expect((workflows as ReadonlyArray<{ name: string }>).map((w) => w.name)).toEqual([
          "Shopping List Workflow",
          "Job Application Tracker",
          "Content Creation Workflow",
          "Streaming Content Creation Workflow",
          "Conditional Greeting Workflow",
          "Adaptive Assistant Workflow",
          "Smart Task Management Workflow",
          "Project Management Workflow",
          "Article Workflow",
          "Expense Approval Workflow"
        ])
        const run = yield* Effect.promise(() =>
          fetch(`${server.url}/workflows/${encodeURIComponent(ShoppingList.shoppingWorkflow.name)}/runs`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ input: ShoppingList.inputs[0], sessionId: "over-http" })
          }).then((r) => r.json())
        )
        expect((run as { state: unknown }).state).toEqual({ shopping_list: ["milk", "bread", "eggs"] })
        const page = yield* Effect.promise(() => fetch(`${server.url}/`).then((r) => r.text()))
        expect(page).toContain("sessionflow · sessions")

        const stored = yield* Effect.flatMap(SessionStore.SessionStore, (store) => store.info("over-http")).pipe(
          Effect.provide(SqliteSessionStore.layer({ filename: db, readonly: true }))
        )
        expect(Option.map(stored, (s) => s.workflowName)).toEqual(Option.some(ShoppingList.shoppingWorkflow.name))
      }),
    120_000
  )

  it.live(
    "resumes a run in the --db file whose process died (its lease expired)",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const db = yield* tempDb("server.db")
        const store = SqliteSessionStore.layer({ filename: db })
        const now = Date.now()
        yield* Effect.flatMap(SessionStore.SessionStore, (sessions) =>
          sessions.startRun({
            runId: "orphan-run",
            sessionId: "orphaned",
            workflowName: ShoppingList.shoppingWorkflow.name,
            status: "running",
            input: ShoppingList.inputs[0],
            owner: "a-process-that-died",
            leaseExpiresAt: now - 1000,
            baseVersion: 0,
            initialState: { shopping_list: [] },
            durability: "step",
            startedAt: now - 5000,
            updatedAt: now - 5000
          })).pipe(Effect.provide(store))
        yield* serve(["--port", "0", "--db", db])
        const record = yield* Effect.flatMap(SessionStore.SessionStore, (sessions) => sessions.getRun("orphan-run"))
          .pipe(
            Effect.provide(store),
            Effect.map((found) =>
              Option.isSome(found) && found.value._tag === "Recorded" ? found.value.record : undefined
            ),
            Effect.zipLeft(Effect.sleep("200 millis")),
            Effect.repeat({ until: (record) => record !== undefined }),
            Effect.timeoutFail({
              duration: "60 seconds",
              onTimeout: () => new Error("the orphaned run was never resumed")
            })
          )
        expect(record).toMatchObject({ runId: "orphan-run", status: "completed" })
        const state = yield* Effect.flatMap(SessionStore.SessionStore, (sessions) => sessions.load("orphaned")).pipe(
          Effect.provide(store)
        )
        expect(Option.map(state, (s) => s.state)).toEqual(Option.some({ shopping_list: ["milk", "bread", "eggs"] }))
      })),
    120_000
  )

  it.scoped(
    "with --token (or SESSIONFLOW_TOKEN) every request must send it; a non-loopback --host needs one",
    () =>
      Effect.gen(function*() {
        const sessions = (url: string, headers: Record<string, string>) =>
          Effect.promise(() => fetch(`${url}/workflows/shopping-list/sessions`, { headers }).then((r) => r.status))
        for (const [args, env] of [[["--token", "s3cret"], {}], [[], { SESSIONFLOW_TOKEN: "s3cret" }]] as const) {
          const db = yield* tempDb("token.db")
          const server = yield* serve(["--port", "0", "--db", db, ...args], env)
          expect(yield* sessions(server.url, {})).toBe(401)
          expect(yield* sessions(server.url, { authorization: "Bearer wrong" })).toBe(401)
          expect(yield* sessions(server.url, { authorization: "Bearer s3cret" })).toBe(200)
          // the hint is printed just after the address the test waited for
          expect(yield* printed(server, "Authorization: Bearer")).toContain("Authorization: Bearer")
        }
        const db = yield* tempDb("open.db")
        const refused = yield* Effect.flip(serve(["--port", "0", "--db", db, "--host", "0.0.0.0"]))
        expect(refused.message).toContain("0.0.0.0")
      }),
    180_000
  )

  it.effect("refuses a port that is not a number", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Cli.run(["serve", "--port", "eighty"]))
      expect(error).toBeInstanceOf(Cli.UsageError)
      expect((error as Cli.UsageError).message).toBe("serve: --port must be a port number, not 'eighty'")
    }))
})
