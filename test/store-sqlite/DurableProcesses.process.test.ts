import { Effect } from "effect"
import { durableProcessSuite } from "../durableProcesses.js"
import { tempFile } from "./processes.js"

durableProcessSuite("SQLite", Effect.map(tempFile, (filename) => ({ store: filename, effects: `${filename}.effects` })))
