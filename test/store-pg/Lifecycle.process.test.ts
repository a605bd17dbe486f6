import { Effect } from "effect"
import { lifecycleProcessSuite } from "../lifecycleProcesses.js"
import { freshSchema } from "./pg.js"

lifecycleProcessSuite("PostgreSQL", Effect.map(freshSchema, (schema) => `pg:${schema}`))
