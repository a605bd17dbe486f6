import { queueProcessSuite } from "../queueProcesses.js"
import { tempFile } from "./processes.js"

queueProcessSuite("SQLite", tempFile)
