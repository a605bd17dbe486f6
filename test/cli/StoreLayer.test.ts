import { describe, expect, it } from "@effect/vitest"
import { Cli } from "@sessionflow/cli"
import { Effect, Layer } from "effect"
import { freshSchema, testUrl } from "../store-pg/pg.js"

describe("the store a command line names", () => {
  it.scoped(
    "a PostgreSQL session table not on the search_path: the error suggests --schema; with --schema it does not",
    () =>
      Effect.gen(function*() {
        const table = `missing_${crypto.randomUUID().replaceAll("-", "")}`
        const database = { _tag: "Postgres", url: testUrl } as const
        const noSchema = yield* Layer.build(Cli.storeLayer(database, { table, migrate: false })).pipe(Effect.flip)
        expect(noSchema.description).toBe(
          `there is no session table '${table}' (or it is not fully created); ` +
            `if the tables are in a schema, give it with --schema <name>`
        )
        const schema = yield* freshSchema
        const inSchema = yield* Layer.build(Cli.storeLayer(database, { table, schema, migrate: false })).pipe(
          Effect.flip
        )
        expect(inSchema.description).toBe(
          `there is no session table '${table}' in schema '${schema}' (or it is not fully created)`
        )
      })
  )
})
