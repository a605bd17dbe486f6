/**
 * A command that keeps running (`sessionflow dev`), as a scoped child process:
 * wait for a line it prints, send requests, and stop it with SIGINT when the
 * scope closes.
 */
import type { Scope } from "effect"
import { Effect } from "effect"
import { spawn } from "node:child_process"

export interface Running {
  /** The first line of stdout (or stderr) after the `skip` first matching `pattern`, once printed. */
  readonly line: (stream: "stdout" | "stderr", pattern: RegExp, skip?: number) => Effect.Effect<string>
  readonly stdout: () => string
  readonly stderr: () => string
  /** SIGINT, then the exit code */
  readonly interrupt: Effect.Effect<number | null>
}

export const start = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd: string; readonly env?: Record<string, string | undefined> }
): Effect.Effect<Running, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(command, args, {
        cwd: options.cwd,
        env: { ...process.env, NO_COLOR: "1", ...options.env },
        stdio: ["ignore", "pipe", "pipe"]
      })
      const text = { stdout: "", stderr: "" }
      const waiters = new Set<() => void>()
      const changed = () => waiters.forEach((w) => w())
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        text.stdout += chunk
        changed()
      })
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
        text.stderr += chunk
        changed()
      })
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
      exited.then(changed)
      const find = (stream: "stdout" | "stderr", pattern: RegExp, skip: number) =>
        text[stream].split("\n").slice(0, -1).filter((l) => pattern.test(l))[skip]
      const running: Running = {
        line: (stream, pattern, skip = 0) =>
          Effect.async<string>((resume) => {
            const check = () => {
              const found = find(stream, pattern, skip)
              if (found !== undefined) {
                waiters.delete(check)
                resume(Effect.succeed(found))
              } else if (child.exitCode !== null) {
                waiters.delete(check)
                resume(
                  Effect.die(
                    new Error(`exited (${child.exitCode}) before printing ${pattern}\n${text.stderr}\n${text.stdout}`)
                  )
                )
              }
            }
            waiters.add(check)
            check()
            return Effect.sync(() => waiters.delete(check))
          }),
        stdout: () => text.stdout,
        stderr: () => text.stderr,
        interrupt: Effect.promise(() => {
          if (child.exitCode === null) child.kill("SIGINT")
          return exited
        })
      }
      return { child, running }
    }),
    // SIGINT, so that the command stops its own server process too
    ({ running }) => Effect.asVoid(running.interrupt)
  ).pipe(Effect.map(({ running }) => running))

/** POSTs a run and returns its status and JSON body. */
export const postRun = (url: string, workflow: string, body: unknown) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}/workflows/${workflow}/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    return { status: response.status, body: (await response.json()) as Record<string, unknown> }
  })
