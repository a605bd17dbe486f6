/**
 * The store's own pool prepares the statements a connection sends again
 * (`prepare`, default on): checked on the server, in `pg_prepared_statements`
 * of the one connection a pool of one holds; a statement whose table changed
 * under it fails once, then the connection goes on unprepared; and the runs
 * of a workflow on the store's own pool commit and read back what went in.
 */
import { assert, describe, it } from "@effect/vitest"
import { SessionState, Step, Workflow } from "@sessionflow/core"
import { PgSessionStore } from "@sessionflow/store-pg"
import { Effect, Redacted, Schema } from "effect"
import type * as Pg from "pg"
import * as connections from "../../packages/store-pg/src/internal/connections.js"
import { freshSchema, testUrl, withClient } from "./pg.js"

/** A client of the store's pool, held until the scope closes, so that every query below runs on the same connection. */
const heldClient = (prepare?: boolean) =>
  Effect.flatMap(
    connections.makePool({
      url: Redacted.make(testUrl),
      maxConnections: 1,
      ...(prepare === undefined ? {} : { prepare })
    }),
    (pool) =>
      Effect.acquireRelease(Effect.promise(() => pool.connect()), (client) => Effect.sync(() => client.release()))
  )

/** A query as `PgClient` sends it: text, parameters and a callback. */
const query = (client: Pg.PoolClient, text: string, values: ReadonlyArray<unknown> = []) =>
  Effect.async<Pg.QueryResult, Error>((resume) => {
    client.query(
      text,
      [...values],
      (error: Error | undefined, result: Pg.QueryResult) =>
        resume(error === undefined || error === null ? Effect.succeed(result) : Effect.fail(error))
    )
  })

const preparedOn = (client: Pg.PoolClient) =>
  Effect.map(
    query(client, "SELECT statement FROM pg_prepared_statements WHERE name LIKE 'sessionflow_%' ORDER BY statement"),
    (result) => result.rows.map((row: { statement: string }) => row.statement)
  )

describe("PostgreSQL prepared statements", () => {
  it.scoped(
    "a statement with parameters is prepared from its second use, once; one sent once, or without parameters, is not",
    () =>
      Effect.gen(function*() {
        const client = yield* heldClient()
        const twice = "SELECT $1::int + 1 AS n"
        const once = "SELECT $1::int + 2 AS n"
        const bare = "SELECT 3 AS n"
        for (let i = 0; i < 3; i++) {
          const result = yield* query(client, twice, [i])
          assert.strictEqual(result.rows[0].n, i + 1)
          yield* query(client, bare)
        }
        assert.strictEqual((yield* query(client, once, [1])).rows[0].n, 3)
        assert.deepStrictEqual(yield* preparedOn(client), [twice])
      })
  )

  it.scoped("prepare: false prepares nothing", () =>
    Effect.gen(function*() {
      const client = yield* heldClient(false)
      for (let i = 0; i < 3; i++) yield* query(client, "SELECT $1::int AS n", [i])
      assert.deepStrictEqual(yield* preparedOn(client), [])
    }))

  it.scoped(
    "a table changed under a prepared statement fails that statement once; the connection then sends it unprepared",
    () =>
      Effect.gen(function*() {
        const schema = yield* freshSchema
        const table = `"${schema}".items`
        yield* withClient((sql) => sql.unsafe(`CREATE TABLE ${table} (id int PRIMARY KEY, name text)`))
        yield* withClient((sql) => sql.unsafe(`INSERT INTO ${table} VALUES (1, 'one')`))
        const client = yield* heldClient()
        const select = `SELECT * FROM ${table} WHERE id = $1`
        yield* query(client, select, [1])
        yield* query(client, select, [1])
        assert.deepStrictEqual(yield* preparedOn(client), [select])
        // another connection changes the table: the prepared plan's result type no longer holds
        yield* withClient((sql) => sql.unsafe(`ALTER TABLE ${table} ADD COLUMN size int DEFAULT 7`))
        const refused = yield* Effect.flip(query(client, select, [1]))
        assert.strictEqual((refused as { code?: unknown }).code, "0A000")
        const after = yield* query(client, select, [1])
        assert.deepStrictEqual(after.rows, [{ id: 1, name: "one", size: 7 }])
        // the connection prepares nothing more
        yield* query(client, `SELECT name FROM ${table} WHERE id = $1`, [1])
        yield* query(client, `SELECT name FROM ${table} WHERE id = $1`, [1])
        assert.deepStrictEqual(yield* preparedOn(client), [select])
      })
  )

  it.effect("runs on the store's own pool (prepared commits and reads) keep what went in", () => {
    class Counter extends SessionState.Tag("test/PreparedCounter")<Counter>()({
      count: Schema.Number,
      seen: Schema.Array(Schema.String)
    }) {}
    const workflow = Workflow.make({
      name: "prepared",
      state: Counter,
      sessionState: { count: 0, seen: [] },
      steps: [
        Step.make(
          "count",
          (input) => Counter.update((s) => ({ count: s.count + 1, seen: [...s.seen, `${input.input}·é\u{1F600}`] }))
        )
      ]
    })
    return Effect.gen(function*() {
      const schema = yield* freshSchema
      const runs = Effect.gen(function*() {
        const sessionId = `prepared-${crypto.randomUUID()}`
        const outputs = []
        for (let i = 0; i < 6; i++) outputs.push(yield* Workflow.run(workflow, `run-${i}`, { sessionId }))
        for (let i = 0; i < 4; i++) yield* Workflow.run(workflow, `other-${i}`)
        const versions = yield* Workflow.sessionVersions(workflow, sessionId)
        const third = yield* Workflow.getSessionState(workflow, sessionId, { version: 3 })
        return { outputs, versions, third }
      }).pipe(Effect.provide(PgSessionStore.layer({ url: testUrl, schema, maxConnections: 1 })))
      const { outputs, third, versions } = yield* runs
      const last = outputs[outputs.length - 1]!
      assert.deepStrictEqual(last.state, {
        count: 6,
        seen: Array.from({ length: 6 }, (_, i) => `run-${i}·é\u{1F600}`)
      })
      assert.deepStrictEqual(versions.map((v) => v.version), [1, 2, 3, 4, 5, 6])
      assert.deepStrictEqual(third, { count: 3, seen: ["run-0·é\u{1F600}", "run-1·é\u{1F600}", "run-2·é\u{1F600}"] })
    }).pipe(Effect.scoped)
  })
})
