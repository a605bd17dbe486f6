import { Effect } from "effect"
import { durabilityRaceSuite } from "../durabilityRules.js"
import { freshSchema } from "./pg.js"

durabilityRaceSuite("PostgreSQL", Effect.map(freshSchema, (schema) => `pg:${schema}`))
