import { Effect } from "effect"
import { durableTimeProcessSuite } from "../durableTimeProcesses.js"
import { tempFile } from "../store-sqlite/processes.js"
import { freshSchema } from "./pg.js"

durableTimeProcessSuite(
  "PostgreSQL",
  Effect.all({
    store: Effect.map(freshSchema, (schema) => `pg:${schema}`),
    effects: Effect.map(tempFile, (dir) => `${dir}.effects`)
  })
)
