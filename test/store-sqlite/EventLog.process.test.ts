import { eventLogProcessSuite } from "../eventLogProcesses.js"
import { tempFile } from "./processes.js"

eventLogProcessSuite("SQLite", tempFile)
