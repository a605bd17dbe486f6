/**
 * How the SQL store keeps sessions' versions, the same on every database: as
 * changes from the version before, with a whole state now and then, so that
 * what they weigh stays within the bound `SessionStore.defaultHistory`
 * documents (two whole states and the changes of the last 2 × keep commits),
 * whatever the commit sends (its changes, or its whole state); and a kept
 * version that does not read back is a typed error.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { SessionStore } from "@sessionflow/core"
import { Context, Effect, Layer, Option } from "effect"
import { type Database, dialects } from "./dialects.js"

const open = (db: Database) =>
  Effect.gen(function*() {
    const store = yield* Effect.map(Layer.build(db.layer()), Context.get(SessionStore.SessionStore))
    const sql = yield* Effect.map(Layer.build(db.client), Context.get(SqlClient.SqlClient))
    const versions = sql(db.table("sessionflow_sessions_versions"))
    /** the rows kept for a session: how many, how many hold a whole state, and their characters */
    const weight = (sessionId: string) =>
      Effect.map(
        sql<{ rows: unknown; whole: unknown; size: unknown }>`SELECT COUNT(*) AS rows,
  SUM(CASE WHEN state IS NULL THEN 0 ELSE 1 END) AS whole,
  SUM(length(COALESCE(state, changes, '')) + length(COALESCE(changed, ''))) AS size
FROM ${versions} WHERE session_id = ${sessionId}`,
        ([row]) => ({ rows: Number(row!.rows), whole: Number(row!.whole), size: Number(row!.size) })
      )
    return { store, sql, versions, weight }
  })

for (const dialect of dialects) {
  describe(`SqlSessionStore on ${dialect.name}: kept versions`, () => {
    for (const sends of ["changes", "state"] as const) {
      it.scoped(
        `a growing state committed 300 times (${sends}): the rows stay within two whole states and 40 commits' changes`,
        () =>
          Effect.gen(function*() {
            const db = yield* dialect.fresh
            const { store, weight } = yield* open(db)
            const items: Array<string> = []
            yield* store.commit({ sessionId: "g", workflowName: "wf", expectedVersion: 0, state: { items: [] } })
            for (let version = 1; version <= 300; version++) {
              const item = `item ${String(version).padStart(4, "0")} of the list`
              items.push(item)
              yield* store.commit({
                sessionId: "g",
                workflowName: "wf",
                expectedVersion: version,
                state: { items: [...items] },
                ...(sends === "changes" ? { changes: [{ op: "append" as const, path: ["items"], items: [item] }] } : {})
              })
            }
            const kept = yield* weight("g")
            const whole = JSON.stringify({ items }).length
            const change = JSON.stringify([{ op: "append", path: ["items"], items: [items[0]] }]).length +
              `["items"]`.length
            // the default keeps 20: at most 40 rows, of which at most 2 whole states
            assert.isAtMost(kept.rows, 40)
            assert.isAtLeast(kept.rows, 20)
            assert.isAtMost(kept.whole, 2)
            assert.isAtMost(kept.size, 2 * whole + 40 * change)
            // against a whole state per version: what 20 copies of the state would weigh
            assert.isBelow(kept.size, 20 * whole / 4)
            assert.deepStrictEqual(
              (yield* store.versions("g")).map((v) => v.version),
              Array.from({ length: 20 }, (_, i) => 282 + i)
            )
            assert.deepStrictEqual(
              Option.getOrUndefined(yield* store.loadVersion("g", 282)),
              { items: items.slice(0, 281) }
            )
          })
      )
    }

    it.scoped(
      "a whole-state commit's changes are taken from the version before as " +
        "stored: not from a state changed in place, nor one another store made anew",
      () =>
        Effect.gen(function*() {
          const db = yield* dialect.fresh
          const a = (yield* open(db)).store
          // another store on the same tables: another process
          const b = (yield* open(db)).store
          const commit = (store: SessionStore.Service, expectedVersion: number, state: unknown) =>
            store.commit({ sessionId: "s", workflowName: "wf", expectedVersion, state })
          const versionOf = (version: number) => Effect.map(a.loadVersion("s", version), Option.getOrUndefined)

          yield* commit(a, 0, { x: 1, y: 1 })
          yield* commit(a, 1, { x: 1, y: 2 })
          // the session removed and made anew elsewhere, up to the same version, with
          // a last change of the same text as the first store's
          assert.isTrue(yield* b.remove("s"))
          yield* commit(b, 0, { x: 5, y: 1 })
          yield* commit(b, 1, { x: 5, y: 2 })
          yield* commit(a, 2, { x: 1, y: 2 })
          assert.deepStrictEqual(yield* versionOf(2), { x: 5, y: 2 })
          assert.deepStrictEqual(yield* versionOf(3), { x: 1, y: 2 })

          // a committed value its caller changes afterwards, then commits as it now is
          const committed = { x: 1, y: 2, list: [{ a: 1 }] }
          yield* commit(a, 3, committed)
          committed.list[0]!.a = 2
          yield* commit(a, 4, committed)
          yield* commit(b, 5, { x: 1, y: 3, list: [{ a: 2 }] })
          yield* commit(a, 6, { x: 1, y: 3, list: [{ a: 3 }] })
          assert.deepStrictEqual(
            yield* Effect.forEach([4, 5, 6, 7], versionOf),
            [{ x: 1, y: 2, list: [{ a: 1 }] }, { x: 1, y: 2, list: [{ a: 2 }] }, { x: 1, y: 3, list: [{ a: 2 }] }, {
              x: 1,
              y: 3,
              list: [{ a: 3 }]
            }]
          )
          assert.deepStrictEqual(
            Option.map(yield* b.load("s"), (s) => s.state),
            Option.some({ x: 1, y: 3, list: [{ a: 3 }] })
          )
        })
    )

    it.scoped(
      "a kept version that is not JSON is a StateDecodeError naming the session; the session loads as usual",
      () =>
        Effect.gen(function*() {
          const db = yield* dialect.fresh
          const { store, sql, versions } = yield* open(db)
          yield* store.commit({ sessionId: "bad", workflowName: "wf", expectedVersion: 0, state: { n: 1 } })
          yield* store.commit({ sessionId: "bad", workflowName: "wf", expectedVersion: 1, state: { n: 2 } })
          yield* sql`UPDATE ${versions} SET changes = 'not json' WHERE session_id = 'bad' AND version = 2`
          const error = yield* Effect.flip(store.loadVersion("bad", 2))
          assert.deepStrictEqual(error._tag === "StateDecodeError" ? [error.sessionId, error.reason] : error._tag, [
            "bad",
            "corrupt"
          ])
          assert.deepStrictEqual(Option.getOrUndefined(yield* store.loadVersion("bad", 1)), { n: 1 })
          assert.deepStrictEqual(Option.map(yield* store.load("bad"), (s) => s.state), Option.some({ n: 2 }))
          // the next commit does not build on it: it keeps its whole state
          yield* store.commit({ sessionId: "bad", workflowName: "wf", expectedVersion: 2, state: { n: 3 } })
          assert.deepStrictEqual(Option.getOrUndefined(yield* store.loadVersion("bad", 3)), { n: 3 })
        })
    )
  })
}
