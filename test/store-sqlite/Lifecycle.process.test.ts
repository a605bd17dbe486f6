import { lifecycleProcessSuite } from "../lifecycleProcesses.js"
import { tempFile } from "./processes.js"

lifecycleProcessSuite("SQLite", tempFile)
