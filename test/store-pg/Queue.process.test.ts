import { Effect } from "effect"
import { queueProcessSuite } from "../queueProcesses.js"
import { freshSchema } from "./pg.js"

queueProcessSuite("PostgreSQL", Effect.map(freshSchema, (schema) => `pg:${schema}`))
