import { Effect } from "effect"
import { eventLogProcessSuite } from "../eventLogProcesses.js"
import { freshSchema } from "./pg.js"

eventLogProcessSuite("PostgreSQL", Effect.map(freshSchema, (schema) => `pg:${schema}`))
