/**
 * Runs commands as real child processes and collects what they print.
 */
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"

/** The repository's root folder. */
export const root = fileURLToPath(new URL("..", import.meta.url))

export interface ProcessResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs `command` to its end (killed if the fiber is interrupted first). */
export const exec = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string; readonly env?: Record<string, string | undefined> } = {}
): Effect.Effect<ProcessResult, Error> =>
  Effect.async<ProcessResult, Error>((resume) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? root,
      env: { ...process.env, NO_COLOR: "1", ...options.env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    child.on("error", (error) => resume(Effect.fail(error)))
    child.on("close", (code) => resume(Effect.succeed({ code, stdout, stderr })))
    return Effect.sync(() => {
      if (child.exitCode === null) child.kill("SIGKILL")
    })
  })

/** The `sessionflow` command, run from its TypeScript sources by node (with tsx). */
export const sessionflow = (args: ReadonlyArray<string>) =>
  exec(process.execPath, [
    "--conditions=@sessionflow/source",
    "--import",
    "tsx",
    fileURLToPath(new URL("../packages/cli/src/bin.ts", import.meta.url)),
    ...args
  ])
