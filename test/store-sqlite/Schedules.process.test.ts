import { scheduleProcessSuite } from "../scheduleProcesses.js"
import { tempFile } from "./processes.js"

scheduleProcessSuite("SQLite", tempFile)
