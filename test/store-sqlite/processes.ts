/**
 * Runs the fixture scripts as separate OS processes (through tsx).
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"

const tsx = fileURLToPath(new URL("../../node_modules/.bin/tsx", import.meta.url))

export interface Worker {
  /** succeeds once the worker printed `ready` */
  readonly ready: Effect.Effect<void, Error>
  /** sends the start line */
  readonly start: Effect.Effect<void>
  /** succeeds with the worker's stdout when it exits with code 0 */
  readonly exit: Effect.Effect<string, Error>
}

/** Spawns `fixtures/<script>`; the process is killed if the scope closes before it exits. */
export const spawnFixture = (script: string, args: ReadonlyArray<string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(tsx, [fileURLToPath(new URL(`./fixtures/${script}`, import.meta.url)), ...args], {
        stdio: ["pipe", "pipe", "pipe"]
      })
      let stdout = ""
      let stderr = ""
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
      const exited = new Promise<string>((resolve, reject) =>
        child.on("close", (code, signal) =>
          code === 0
            ? resolve(stdout)
            : reject(new Error(`${script} exited with ${code ?? signal}\n${stderr}\n${stdout}`)))
      )
      const ready = new Promise<void>((resolve, reject) => {
        child.stdout.on("data", () => stdout.split("\n").includes("ready") && resolve())
        exited.then(() => reject(new Error(`${script} exited before it was ready`)), reject)
      })
      // both are awaited (or the test fails) later; never unhandled
      exited.catch(() => {})
      ready.catch(() => {})
      const worker: Worker = {
        ready: Effect.tryPromise({ try: () => ready, catch: (e) => e as Error }),
        start: Effect.sync(() => {
          child.stdin.end("start\n")
        }),
        exit: Effect.tryPromise({ try: () => exited, catch: (e) => e as Error })
      }
      return { child, worker }
    }),
    ({ child }) => Effect.sync(() => child.exitCode === null && child.signalCode === null && child.kill("SIGKILL"))
  ).pipe(Effect.map(({ worker }) => worker))

/** The last non-empty line a worker printed, parsed as JSON. */
export const lastJsonLine = (stdout: string): unknown => JSON.parse(stdout.trim().split("\n").at(-1)!)
