import { Effect } from "effect"
import { scheduleProcessSuite } from "../scheduleProcesses.js"
import { freshSchema } from "./pg.js"

scheduleProcessSuite("PostgreSQL", Effect.map(freshSchema, (schema) => `pg:${schema}`))
