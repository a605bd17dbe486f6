/**
 * W7 — runs per second over HTTP (`@sessionflow/server`, its own process,
 * memory store) against the same runs in process (`Workflow.run`, memory
 * store): the workload's ten-step typed workflow, each run on a new session,
 * one client at a time and 8 at once; over HTTP as JSON and as server-sent
 * events (the whole stream read).
 */
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { SessionStore, Workflow } from "../../packages/core/src/index.ts"
import { type Figure, figures, log, rotate } from "./measure.ts"
import { check, gc, pool } from "./util.ts"
import { workflow } from "./w7-workflow.ts"
import { STEPS } from "./workload.ts"
import type { Config } from "./workloads.ts"

const serverScript = fileURLToPath(new URL("./w7-server.ts", import.meta.url))

/** Starts the server in a child process; closing its stdin stops it. */
const startServer = (): Promise<{ url: string; stop: () => Promise<void> }> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--conditions=@sessionflow/source", ...process.execArgv, serverScript], {
      stdio: ["pipe", "pipe", "inherit"]
    })
    let stdout = ""
    const exited = new Promise<void>((done) => child.on("exit", () => done()))
    child.on("error", reject)
    child.on("exit", (code) => reject(new Error(`the W7 server exited with ${code}`)))
    child.stdout.on("data", (chunk) => {
      stdout += chunk
      const line = stdout.split("\n")[0]
      if (stdout.includes("\n") && line !== undefined) {
        resolve({
          url: (JSON.parse(line) as { url: string }).url,
          stop: () => {
            child.stdin.end()
            return exited
          }
        })
      }
    })
  })

const SYS = {
  inProcess: "sessionflow in process",
  json: "HTTP, JSON",
  sse: "HTTP, server-sent events"
} as const

type Runs = (sessionIds: ReadonlyArray<string>, concurrency: number) => Promise<void>

export const w7 = async (config: Config): Promise<Array<Figure>> => {
  const runs = config.quick ? 40 : 400
  const warmup = config.quick ? 20 : 200
  const cases = [1, 8] as const
  log(`W7 HTTP: ${runs} runs per measure, ${cases.join(" and ")} clients, ${config.reps} repetitions`)
  const runtime = ManagedRuntime.make(SessionStore.layerMemory)
  const { url, stop } = await startServer()
  const endpoint = `${url}/workflows/bench/runs`
  let lastCounter = 0
  const post = (sessionId: string, accept: string) =>
    fetch(endpoint, {
      method: "POST",
      headers: { "content-type": "application/json", accept },
      body: JSON.stringify({ input: null, sessionId })
    })
  const systems: Record<string, Runs> = {
    [SYS.inProcess]: (ids, concurrency) =>
      runtime.runPromise(
        Effect.forEach(ids, (sessionId) => Workflow.run(workflow, null, { sessionId }), { concurrency, discard: true })
      ),
    [SYS.json]: (ids, concurrency) =>
      pool(ids, concurrency, async (sessionId) => {
        const response = await post(sessionId, "application/json")
        const body = await response.json() as { state: { counter: number } }
        lastCounter = body.state.counter
      }),
    [SYS.sse]: (ids, concurrency) =>
      pool(ids, concurrency, async (sessionId) => {
        const text = await (await post(sessionId, "text/event-stream")).text()
        if (!text.includes("event: RunCompleted")) {
          throw new Error(`W7: a stream did not complete:\n${text.slice(-500)}`)
        }
      })
  }
  try {
    const names = Object.keys(systems)
    for (const name of names) await systems[name]!(Array.from({ length: warmup }, (_, i) => `warm-${name}-${i}`), 8)
    const values = new Map<number, Map<string, Array<number>>>(
      cases.map((c) => [c, new Map(names.map((n) => [n, []]))])
    )
    for (let rep = 0; rep < config.reps; rep++) {
      for (const concurrency of cases) {
        for (const name of rotate(names, rep)) {
          const ids = Array.from({ length: runs }, (_, i) => `r${rep}-c${concurrency}-${name}-${i}`)
          await gc()
          const started = performance.now()
          await systems[name]!(ids, concurrency)
          const seconds = (performance.now() - started) / 1000
          values.get(concurrency)!.get(name)!.push(runs / seconds)
        }
      }
    }
    check("W7 HTTP counter after one run", lastCounter, STEPS)
    return cases.flatMap((concurrency) =>
      figures(
        {
          workload: "W7 HTTP",
          case: `${concurrency === 1 ? "1 client" : `${concurrency} clients`}, new session per run`,
          unit: "runs/s",
          reference: SYS.inProcess,
          notes: {
            [SYS.inProcess]: "Workflow.run, memory store",
            [SYS.json]: "WorkflowServer.serve in a child process, POST …/runs, JSON RunOutput",
            [SYS.sse]: "the same with Accept: text/event-stream, whole stream read"
          }
        },
        values.get(concurrency)!
      )
    )
  } finally {
    await stop()
    await runtime.dispose()
  }
}
