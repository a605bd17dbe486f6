import { describe, expect, it } from "@effect/vitest"
import { SessionStore } from "@sessionflow/core"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Effect } from "effect"
import { exec } from "../process.js"
import { tempDb } from "./utils.js"

describe("npm start", () => {
  it.scoped(
    "`npm start --silent -- … --json` prints JSON alone on stdout; without --silent npm's banner comes first",
    () =>
      Effect.gen(function*() {
        const db = yield* tempDb()
        yield* Effect.flatMap(
          SessionStore.SessionStore,
          (store) => store.commit({ sessionId: "s1", workflowName: "wf", expectedVersion: 0, state: { n: 1 } })
        ).pipe(
          Effect.provide(SqliteSessionStore.layer({ filename: db }))
        )
        const args = ["start", "--", "sessions", "list", "--json", "--db", db]
        const [silent, noisy] = yield* Effect.all([
          exec("npm", ["--silent", ...args]),
          exec("npm", args)
        ], { concurrency: 2 })
        expect(silent.code, silent.stderr).toBe(0)
        expect((JSON.parse(silent.stdout) as ReadonlyArray<SessionStore.SessionInfo>).map((s) => s.sessionId)).toEqual([
          "s1"
        ])
        expect(noisy.code, noisy.stderr).toBe(0)
        expect(noisy.stdout.trimStart()).toMatch(/^> start\n> tsx /)
        expect(() => JSON.parse(noisy.stdout)).toThrow()
      })
  )
})
