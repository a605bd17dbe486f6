/**
 * Runs commands as real child processes and collects what they print.
 */
import { Effect } from "effect"
import { type ChildProcessWithoutNullStreams, spawn, type SpawnOptionsWithoutStdio } from "node:child_process"
import { createRequire } from "node:module"
import { fileURLToPath, pathToFileURL } from "node:url"

/** The repository's root folder. */
export const root = fileURLToPath(new URL("..", import.meta.url))

export interface ProcessResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** tsx's loader, by absolute URL, so that it resolves whatever the working directory */
const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href

/**
 * Starts a TypeScript script as a separate OS process: `node --import tsx
 * <script>`, with stdin, stdout and stderr piped. This is one process, so its
 * pid is the script's own and a signal sent to it reaches the script. (The
 * `tsx` binary would start a second node process for the script and relay
 * signals to it, but a SIGKILL cannot be relayed: the script would keep
 * running.)
 */
export const spawnTypeScript = (
  script: string,
  args: ReadonlyArray<string>,
  options?: SpawnOptionsWithoutStdio
): ChildProcessWithoutNullStreams =>
  spawn(process.execPath, ["--import", tsxLoader, script, ...args], { ...options, stdio: "pipe" })

/** Runs a TypeScript script to its end with `node --import tsx` (see {@link spawnTypeScript}). */
export const execTypeScript = (
  script: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string; readonly env?: Record<string, string | undefined>; readonly input?: string } = {}
): Effect.Effect<ProcessResult, Error> => exec(process.execPath, ["--import", tsxLoader, script, ...args], options)

/**
 * Runs `command` to its end (killed if the fiber is interrupted first); its
 * standard input is `input` (else empty).
 */
export const exec = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string; readonly env?: Record<string, string | undefined>; readonly input?: string } = {}
): Effect.Effect<ProcessResult, Error> =>
  Effect.async<ProcessResult, Error>((resume) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? root,
      env: { ...process.env, NO_COLOR: "1", ...options.env },
      stdio: "pipe"
    })
    // its standard input ends after `input` (at once without)
    // (a child that exits without reading it must not fail the test with EPIPE)
    child.stdin.on("error", () => {})
    child.stdin.end(options.input ?? "")
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

/**
 * The `sessionflow` command, run from its TypeScript sources by node (with tsx), with `env` added to the environment.
 */
export const sessionflow = (args: ReadonlyArray<string>, env: Record<string, string | undefined> = {}) =>
  exec(process.execPath, [
    "--conditions=@sessionflow/source",
    "--import",
    tsxLoader,
    fileURLToPath(new URL("../packages/cli/src/bin.ts", import.meta.url)),
    ...args
  ], { env })
