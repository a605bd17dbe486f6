import { durabilityRaceSuite } from "../durabilityRules.js"
import { tempFile } from "./processes.js"

durabilityRaceSuite("SQLite file", tempFile)
