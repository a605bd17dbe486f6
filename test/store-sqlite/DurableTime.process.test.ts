import { Effect } from "effect"
import { durableTimeProcessSuite } from "../durableTimeProcesses.js"
import { tempFile } from "./processes.js"

durableTimeProcessSuite(
  "SQLite",
  Effect.map(tempFile, (filename) => ({ store: filename, effects: `${filename}.effects` }))
)
