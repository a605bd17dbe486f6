/**
 * The `sessionflow` command on PostgreSQL: `--url` (and `--schema`), or the
 * URL in SESSIONFLOW_DATABASE_URL, in a separate process.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cli } from "@sessionflow/cli"
import { SessionStore } from "@sessionflow/core"
import { PgSessionStore } from "@sessionflow/store-pg"
import { Effect } from "effect"
import { sessionflow } from "../process.js"
import { freshSchema, testUrl, withClient } from "../store-pg/pg.js"

const run = (sessionId: string, n: number): SessionStore.RunRecord => ({
  runId: `${sessionId}-r${n}`,
  sessionId,
  workflowName: "shop",
  status: "completed",
  input: { message: `add ${n}` },
  content: `added ${n}`,
  startedAt: 1_000 * n,
  completedAt: 1_000 * n + 500
})

/** A fresh schema holding two sessions written by the PostgreSQL store. */
const sampleSchema = Effect.gen(function*() {
  const schema = yield* freshSchema
  yield* Effect.gen(function*() {
    const store = yield* SessionStore.SessionStore
    yield* store.commit({
      sessionId: "alice-1",
      workflowName: "shop",
      userId: "alice",
      expectedVersion: 0,
      state: { items: ["milk"] },
      run: run("alice-1", 1)
    })
    yield* store.commit({
      sessionId: "alice-1",
      workflowName: "shop",
      userId: "alice",
      expectedVersion: 1,
      state: { items: ["milk", "eggs"] },
      run: run("alice-1", 2)
    })
    yield* store.commit({
      sessionId: "bob-1",
      workflowName: "shop",
      expectedVersion: 0,
      state: { items: [] },
      run: run("bob-1", 1)
    })
  }).pipe(Effect.provide(PgSessionStore.layer({ url: testUrl, schema })))
  return schema
})

describe("sessionflow on PostgreSQL", () => {
  it.scoped("sessions list, state, rename and delete with --url and --schema", () =>
    Effect.gen(function*() {
      const schema = yield* sampleSchema
      const db = ["--url", testUrl, "--schema", schema]
      const listed = yield* sessionflow(["sessions", "list", ...db])
      expect(listed.stderr).toBe("")
      expect(listed.code).toBe(0)
      expect(listed.stdout).toContain(`2 sessions in ${new URL(testUrl).toString()} (schema ${schema}):`)
      expect(listed.stdout).toContain("alice-1")
      expect(listed.stdout).toContain("2 runs, version 2")

      const state = yield* sessionflow(["state", ...db, "alice-1", "--json"])
      expect(state.stdout).toBe(`{"items":["milk","eggs"]}\n`)

      expect((yield* sessionflow(["sessions", "rename", ...db, "bob-1", "Bob's list"])).code).toBe(0)
      expect((yield* sessionflow(["sessions", "delete", ...db, "alice-1"])).code).toBe(0)
      const json = yield* sessionflow(["sessions", "list", ...db, "--json"])
      const sessions = JSON.parse(json.stdout) as ReadonlyArray<SessionStore.SessionInfo>
      expect(sessions.map((s) => [s.sessionId, s.name])).toEqual([["bob-1", "Bob's list"]])
    }), 120_000)

  it.scoped("without --db or --url, the URL in SESSIONFLOW_DATABASE_URL", () =>
    Effect.gen(function*() {
      const schema = yield* sampleSchema
      const shown = yield* sessionflow(["sessions", "show", "--schema", schema, "--json", "alice-1"], {
        [Cli.databaseUrlVariable]: testUrl
      })
      expect(shown.code).toBe(0)
      const session = JSON.parse(shown.stdout) as { state: unknown; runs: ReadonlyArray<SessionStore.RunRecord> }
      expect(session.state).toEqual({ items: ["milk", "eggs"] })
      expect(session.runs.map((r) => r.runId)).toEqual(["alice-1-r1", "alice-1-r2"])
      // --db wins over the variable
      const both = yield* sessionflow(["sessions", "list", "--db", "missing.db"], {
        [Cli.databaseUrlVariable]: testUrl
      })
      expect(both.stderr).toContain("no database file 'missing.db'")
    }), 120_000)

  it.scoped(
    "mistakes are one clear line: --db with --url, a URL that is not PostgreSQL's, " +
      "tables that are not there (nothing created), a password never shown",
    () =>
      Effect.gen(function*() {
        const schema = yield* freshSchema
        const both = yield* sessionflow(["sessions", "list", "--db", "a.db", "--url", testUrl])
        expect([both.code, both.stderr]).toEqual([
          2,
          "error: give --db <file> or --url <url>, not both (see: sessionflow sessions list --help)\n"
        ])
        const notPg = yield* sessionflow(["sessions", "list", "--url", "mysql://root:hunter2@localhost/app"])
        expect(notPg.code).toBe(2)
        expect(notPg.stderr).toContain("not a PostgreSQL URL")
        expect(notPg.stderr).not.toContain("hunter2")
        const missing = yield* sessionflow(["sessions", "list", "--url", testUrl, "--schema", schema])
        expect(missing.code).toBe(1)
        expect(missing.stderr).toContain(`there is no session table 'sessionflow_sessions' in schema '${schema}'`)
        const tables = yield* withClient((sql) =>
          sql`SELECT table_name FROM information_schema.tables WHERE table_schema = ${schema}`
        )
        expect(tables).toEqual([])
        const unreachable = yield* sessionflow([
          "sessions",
          "list",
          "--url",
          "postgres://someone:hunter2@127.0.0.1:1/app"
        ])
        expect(unreachable.code).toBe(1)
        expect(unreachable.stderr).toContain("cannot connect to PostgreSQL at postgres://someone@127.0.0.1:1/app")
        expect(unreachable.stderr).not.toContain("hunter2")
      }),
    120_000
  )
})
