import { Effect } from "effect"
import { durableProcessSuite } from "../durableProcesses.js"
import { tempFile } from "../store-sqlite/processes.js"
import { freshSchema } from "./pg.js"

durableProcessSuite(
  "PostgreSQL",
  Effect.all({
    store: Effect.map(freshSchema, (schema) => `pg:${schema}`),
    effects: Effect.map(tempFile, (dir) => `${dir}.effects`)
  })
)
