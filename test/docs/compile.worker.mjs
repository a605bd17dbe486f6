/**
 * Type-checks TypeScript files in a worker thread, so that the test worker
 * that waits for it keeps answering its runner meanwhile. `workerData`:
 * `{ files, options }` (compiler options as in a tsconfig's
 * `compilerOptions`); posts back the diagnostics as
 * `{ file?, line?, column?, code, message }`, lines and columns 1-based.
 */
import { parentPort, workerData } from "node:worker_threads"
import ts from "typescript"

const { files, options } = workerData
const parsed = ts.convertCompilerOptionsFromJson(options, ".")
if (parsed.errors.length > 0) throw new Error(ts.flattenDiagnosticMessageText(parsed.errors[0].messageText, "\n"))
const program = ts.createProgram(files, parsed.options)
parentPort.postMessage(
  ts.getPreEmitDiagnostics(program).map((d) => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, "\n")
    if (d.file === undefined || d.start === undefined) return { code: d.code, message }
    const { line, character } = d.file.getLineAndCharacterOfPosition(d.start)
    return { file: d.file.fileName, line: line + 1, column: character + 1, code: d.code, message }
  })
)
