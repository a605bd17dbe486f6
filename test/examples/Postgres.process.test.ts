/**
 * An example run against PostgreSQL (`--url`, `--schema`), in a separate
 * process; the sessions it stored are read back here.
 */
import { describe, expect, it } from "@effect/vitest"
import { SessionStore } from "@sessionflow/core"
import { PgSessionStore } from "@sessionflow/store-pg"
import { Effect } from "effect"
import { freshSchema, testUrl } from "../store-pg/pg.js"
import { cli } from "./utils.js"

describe("the examples on PostgreSQL", () => {
  it.scoped(
    "run condition --url stores its sessions and runs in PostgreSQL; sessions list --url shows them",
    () =>
      Effect.gen(function*() {
        const schema = yield* freshSchema
        const first = yield* cli(["run", "condition", "--url", testUrl, "--schema", schema])
        expect(first.code, first.stderr).toBe(0)
        expect(first.stderr).toBe("")
        const listed = yield* Effect.flatMap(SessionStore.SessionStore, (store) => store.list({})).pipe(
          Effect.provide(PgSessionStore.layer({ url: testUrl, schema, migrate: false }))
        )
        expect(listed.sessions.length).toBeGreaterThan(0)
        const runsBefore = yield* Effect.flatMap(
          SessionStore.SessionStore,
          (store) => Effect.forEach(listed.sessions, (s) => store.runs(s.sessionId, {}))
        ).pipe(Effect.provide(PgSessionStore.layer({ url: testUrl, schema, migrate: false })))
        const second = yield* cli(["sessions", "list", "--url", testUrl, "--schema", schema])
        expect(second.code, second.stderr).toBe(0)
        for (const s of listed.sessions) expect(second.stdout).toContain(s.sessionId)
        expect(runsBefore.flat().length).toBeGreaterThan(0)
      }),
    120_000
  )
})
