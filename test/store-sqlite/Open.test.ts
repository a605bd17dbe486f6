/**
 * Opening a database: bad files fail typed and stay untouched; read-only and
 * migrate: false never create or change anything.
 */
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { assert, describe, it } from "@effect/vitest"
import { SessionStore, WorkflowError } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Cause, Effect, Exit, Layer, Option } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"

/** A fresh temp directory, deleted afterwards. */
const tempDir = Effect.flatMap(
  FileSystem.FileSystem,
  (fs) => fs.makeTempDirectoryScoped({ prefix: "sessionflow-open-" })
).pipe(
  Effect.provide(NodeFileSystem.layer)
)

/** Every file below `dir` with its bytes: what must not change. */
const snapshot = (dir: string): Record<string, string> =>
  Object.fromEntries(
    fs.readdirSync(dir, { recursive: true, encoding: "utf8" }).sort().map((name) => {
      const file = path.join(dir, name)
      return [name, fs.statSync(file).isDirectory() ? "<dir>" : fs.readFileSync(file).toString("base64")]
    })
  )

/** Builds the store layer; the failure it must fail with (a defect fails the test). */
const openFailure = (layer: Layer.Layer<SessionStore.SessionStore, WorkflowError.SessionStoreError>) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(Effect.scoped(Layer.build(layer)))
    assert(Exit.isFailure(exit), "the layer should not build")
    assert.isFalse(Cause.isDie(exit.cause), `a defect instead of a typed error: ${Cause.pretty(exit.cause)}`)
    const error = Option.getOrThrow(Cause.failureOption(exit.cause))
    assert.instanceOf(error, WorkflowError.SessionStoreError)
    return error
  })

const commitOne = (sessionId: string) =>
  Effect.flatMap(SessionStore.SessionStore, (store) =>
    store.commit({
      sessionId,
      workflowName: "wf",
      expectedVersion: 0,
      state: { n: 1 },
      run: {
        runId: `run-${sessionId}`,
        sessionId,
        workflowName: "wf",
        status: "completed",
        input: "hi",
        content: "done",
        startedAt: 1,
        completedAt: 2
      }
    }))

const tableNames = (filename: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`
  ).pipe(
    Effect.map((rows) => rows.map((row) => row.name)),
    Effect.provide(SqliteClient.layer({ filename, readonly: true, disableWAL: true }))
  )

describe("SqliteSessionStore.layer on a bad database", () => {
  const cases: ReadonlyArray<{
    readonly name: string
    readonly make: (dir: string) => string
    readonly reason: string
  }> = [
    {
      name: "random bytes",
      make: (dir) => {
        const file = path.join(dir, "random.db")
        fs.writeFileSync(file, crypto.randomBytes(16384))
        return file
      },
      reason: "it is not a SQLite database"
    },
    {
      name: "a text file",
      make: (dir) => {
        const file = path.join(dir, "notes.txt")
        fs.writeFileSync(file, "shopping list\n- milk\n- eggs\n".repeat(50))
        return file
      },
      reason: "it is not a SQLite database"
    },
    {
      name: "a directory",
      make: (dir) => {
        const sub = path.join(dir, "folder.db")
        fs.mkdirSync(sub)
        fs.writeFileSync(path.join(sub, "inside.txt"), "keep me")
        return sub
      },
      reason: "it is a directory"
    },
    {
      name: "a path whose folder does not exist",
      make: (dir) => path.join(dir, "missing", "sessions.db"),
      reason: "does not exist"
    }
  ]

  for (const mode of ["read-write", "read-only"] as const) {
    for (const c of cases) {
      it.scoped(`${c.name} (${mode}): a SessionStoreError naming the file, and nothing changes`, () =>
        Effect.gen(function*() {
          const dir = yield* tempDir
          const filename = c.make(dir)
          const before = snapshot(dir)
          const error = yield* openFailure(SqliteSessionStore.layer({ filename, readonly: mode === "read-only" }))
          assert.strictEqual(error.method, "open")
          assert.include(error.description, `'${filename}'`)
          assert.include(error.description, c.reason)
          assert.include(error.message, "SessionStore.open: cannot open the SQLite database")
          assert.deepStrictEqual(snapshot(dir), before)
        }))
    }
  }

  it.scoped("a missing file with readonly or migrate: false is an error, and no file is created", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = path.join(dir, "nothing-here.db")
      for (const options of [{ readonly: true }, { migrate: false }]) {
        const error = yield* openFailure(SqliteSessionStore.layer({ filename, ...options }))
        assert.include(error.description, `'${filename}'`)
        assert.include(error.description, "there is no such file")
        assert.deepStrictEqual(fs.readdirSync(dir), [])
      }
    }))

  it.scoped("a table name taken by another table is a typed error, not a defect, and the table is left alone", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = path.join(dir, "app.db")
      yield* Effect.flatMap(
        SqlClient.SqlClient,
        (sql) =>
          Effect.zipRight(
            sql`CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT)`,
            sql`INSERT INTO users VALUES (1, 'a@b.c')`
          )
      ).pipe(
        Effect.provide(SqliteClient.layer({ filename }))
      )
      const error = yield* openFailure(SqliteSessionStore.layer({ filename, table: "users" }))
      assert.strictEqual(error.method, "make")
      assert.include(error.description, "'users'")
      assert.include(error.description, "already exists")
      const rows = yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT * FROM users`).pipe(
        Effect.provide(SqliteClient.layer({ filename }))
      )
      assert.deepStrictEqual(rows, [{ id: 1, email: "a@b.c" }])
    }))
})

describe("SqliteSessionStore.layer read-only and without migrations", () => {
  /** A store file with one session, written and closed. */
  const storeFile = (options: { readonly table?: string; readonly wal?: boolean } = {}) =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = path.join(dir, "sessions.db")
      yield* commitOne("s1").pipe(
        Effect.provide(
          options.wal === false
            ? SqliteSessionStore.layerStore({ table: options.table }).pipe(
              Layer.provide(SqliteClient.layer({ filename, disableWAL: true }))
            )
            : SqliteSessionStore.layer({ filename, table: options.table })
        )
      )
      return { dir, filename }
    })

  it.scoped("reads a store file without changing a byte of it; every write fails typed", () =>
    Effect.gen(function*() {
      const { filename } = yield* storeFile()
      const before = fs.readFileSync(filename)
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.SessionStore
        assert.deepStrictEqual((yield* store.list({})).sessions.map((s) => s.sessionId), ["s1"])
        assert.deepStrictEqual(Option.map(yield* store.load("s1"), (s) => s.state), Option.some({ n: 1 }))
        assert.deepStrictEqual((yield* store.runs("s1", {})).map((r) => r.runId), ["run-s1"])
        const writes: ReadonlyArray<Effect.Effect<unknown, { readonly _tag: string; readonly message: string }>> = [
          store.setName("s1", "renamed"),
          store.remove("s1"),
          store.commit({ sessionId: "s2", workflowName: "wf", expectedVersion: 0, state: {} })
        ]
        for (const write of writes) {
          const error = yield* Effect.flip(write)
          assert.strictEqual(error._tag, "SessionStoreError")
          assert.include(error.message, "readonly")
        }
      }).pipe(Effect.provide(SqliteSessionStore.layer({ filename, readonly: true })))
      assert.isTrue(fs.readFileSync(filename).equals(before))
    }))

  it.scoped("a database in rollback-journal mode stays in it (no switch to WAL, no -wal file)", () =>
    Effect.gen(function*() {
      const { dir, filename } = yield* storeFile({ wal: false })
      const before = snapshot(dir)
      const sessions = yield* Effect.flatMap(SessionStore.SessionStore, (store) => store.list({})).pipe(
        Effect.provide(SqliteSessionStore.layer({ filename, readonly: true }))
      )
      assert.strictEqual(sessions.sessions.length, 1)
      assert.deepStrictEqual(snapshot(dir), before)
    }))

  for (const options of [{ readonly: true }, { migrate: false }]) {
    const mode = "readonly" in options ? "read-only" : "migrate: false"

    it.scoped(`an unknown table (${mode}) is a clear error listing the session tables; nothing is created`, () =>
      Effect.gen(function*() {
        const { filename } = yield* storeFile({ table: "app_sessions" })
        const tablesBefore = yield* tableNames(filename)
        const error = yield* openFailure(SqliteSessionStore.layer({ filename, table: "typo", ...options }))
        assert.strictEqual(
          error.description,
          `there is no session table 'typo' in '${filename}' (its session tables: app_sessions)`
        )
        assert.deepStrictEqual(yield* tableNames(filename), tablesBefore)
      }))

    it.scoped(`a SQLite file that was never migrated (${mode}) is an error; nothing is created`, () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const filename = path.join(dir, "other-app.db")
        yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE notes (body TEXT)`).pipe(
          Effect.provide(SqliteClient.layer({ filename }))
        )
        const error = yield* openFailure(SqliteSessionStore.layer({ filename, ...options }))
        assert.strictEqual(
          error.description,
          `there is no session table 'sessionflow_sessions' in '${filename}' (it has no session tables)`
        )
        assert.deepStrictEqual(yield* tableNames(filename), ["notes"])
      }))

    it.scoped(`tables left at an older migration (${mode}) are an error, and stay as they are`, () =>
      Effect.gen(function*() {
        const { filename } = yield* storeFile()
        yield* Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql`DELETE FROM sessionflow_sessions_migrations WHERE migration_id >= 3`
        ).pipe(
          Effect.provide(SqliteClient.layer({ filename }))
        )
        const error = yield* openFailure(SqliteSessionStore.layer({ filename, ...options }))
        assert.include(error.description, "'sessionflow_sessions' in")
        assert.include(error.description, "are at migration 2 of 16")
        const ids = yield* Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql<{ migration_id: number }>`SELECT migration_id FROM sessionflow_sessions_migrations`
        ).pipe(
          Effect.provide(SqliteClient.layer({ filename, readonly: true, disableWAL: true }))
        )
        assert.deepStrictEqual(ids, [{ migration_id: 1 }, { migration_id: 2 }])
      }))
  }

  it.scoped("migrate: false writes to existing tables (rename, delete, commit)", () =>
    Effect.gen(function*() {
      const { filename } = yield* storeFile()
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.SessionStore
        yield* store.setName("s1", "named")
        yield* commitOne("s2")
        assert.isTrue(yield* store.remove("s1"))
        assert.deepStrictEqual((yield* store.list({})).sessions.map((s) => s.sessionId), ["s2"])
      }).pipe(Effect.provide(SqliteSessionStore.layer({ filename, migrate: false })))
    }))

  it.effect("layerStore({ migrate: false }) on your own client checks the tables the same way", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(SqliteSessionStore.make({ migrate: false }))
      assert.strictEqual(
        error.description,
        "there is no session table 'sessionflow_sessions' in the database (it has no session tables)"
      )
      yield* SqliteSessionStore.make()
      const store = yield* SqliteSessionStore.make({ migrate: false })
      assert.deepStrictEqual(yield* store.list({}), { sessions: [], broken: [] })
    }).pipe(Effect.provide(SqliteClient.layer({ filename: ":memory:" }))))
})
