/**
 * Helpers for the tests with several OS processes: temp database files, and
 * the fixture scripts run as separate processes (`node --import tsx`, so that
 * the child process is the script itself).
 */
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { Effect } from "effect"
import { fileURLToPath } from "node:url"
import { spawnTypeScript } from "../process.js"

/** A database file in a fresh temp directory, deleted with the scope. */
export const tempFile = Effect.flatMap(
  FileSystem.FileSystem,
  (fs) => fs.makeTempDirectoryScoped({ prefix: "sessionflow-" })
).pipe(
  Effect.map((dir) => `${dir}/sessions.db`),
  Effect.provide(NodeFileSystem.layer)
)

export interface Worker {
  /** the worker's process id */
  readonly pid: number
  /** succeeds once the worker printed `ready` */
  readonly ready: Effect.Effect<void, Error>
  /** sends the start line (and closes the worker's stdin) */
  readonly start: Effect.Effect<void>
  /** succeeds with the worker's stdout when it exits with code 0 */
  readonly exit: Effect.Effect<string, Error>
  /** true until the worker has exited */
  readonly running: Effect.Effect<boolean>
  /** what the worker printed so far */
  readonly stdout: Effect.Effect<string>
  /** sends SIGKILL and waits until the process is gone */
  readonly kill: Effect.Effect<void>
}

/** Spawns `fixtures/<script>`; the process is killed if the scope closes before it exits. */
export const spawnFixture = (script: string, args: ReadonlyArray<string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawnTypeScript(fileURLToPath(new URL(`./fixtures/${script}`, import.meta.url)), args)
      let stdout = ""
      let stderr = ""
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
      const closed = new Promise<void>((resolve) => child.on("close", () => resolve()))
      const exited = closed.then(() =>
        child.exitCode === 0
          ? stdout
          : Promise.reject(
            new Error(`${script} exited with ${child.exitCode ?? child.signalCode}\n${stderr}\n${stdout}`)
          )
      )
      const ready = new Promise<void>((resolve, reject) => {
        child.stdout.on("data", () => stdout.split("\n").includes("ready") && resolve())
        exited.then(() => reject(new Error(`${script} exited before it was ready`)), reject)
      })
      // both are awaited (or the test fails) later; never unhandled
      exited.catch(() => {})
      ready.catch(() => {})
      const running = () => child.exitCode === null && child.signalCode === null
      const worker: Worker = {
        pid: child.pid!,
        ready: Effect.tryPromise({ try: () => ready, catch: (e) => e as Error }),
        start: Effect.sync(() => {
          child.stdin.end("start\n")
        }),
        exit: Effect.tryPromise({ try: () => exited, catch: (e) => e as Error }),
        running: Effect.sync(running),
        stdout: Effect.sync(() => stdout),
        kill: Effect.promise(() => {
          if (running()) child.kill("SIGKILL")
          return closed
        })
      }
      return worker
    }),
    (worker) => worker.kill
  )

/** The last non-empty line a worker printed, parsed as JSON. */
export const lastJsonLine = (stdout: string): unknown => JSON.parse(stdout.trim().split("\n").at(-1)!)

/** Whether a process with this id exists (signal 0 checks without sending anything). */
export const processExists = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: it exists but belongs to someone else
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}
