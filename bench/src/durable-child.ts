/**
 * The child processes of the durable-run figures (`durable.ts`), each on the
 * store its spec names (see `storeLayer`). sessionflow runs from `dist`.
 *
 *   durable-child.ts continue <store> <runId,runId,...>   # continues paused runs; one JSON line
 *   durable-child.ts work <store> <runId> <stallAt>       # a durable run that stalls at step <stallAt>
 *   durable-child.ts supervise <store>                    # DurableRuns.layer until killed
 *
 * `work` and `supervise` print `at-<n> <epoch ms>` when a step starts;
 * `supervise` prints `ready` first.
 */
import { DurableRuns, Workflow } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { approval, crashable, storeLayer } from "./durable-workflows.ts"

/** Milliseconds since this process started, once its modules are loaded. */
const loadedMs = performance.now()
const [mode, spec, arg, stallArg] = process.argv.slice(2) as [string, string, string, string?]

const printStep = (n: number) => Effect.sync(() => process.stdout.write(`at-${n} ${Date.now()}\n`))

const continueAll = async () => {
  const runIds = arg.split(",")
  const runtime = ManagedRuntime.make(storeLayer(spec))
  const t0 = performance.now()
  await runtime.runPromise(Effect.void)
  const openMs = performance.now() - t0
  const times: Array<number> = []
  let firstDoneMs = 0
  for (const runId of runIds) {
    const t = performance.now()
    const out = await runtime.runPromise(Workflow.continue(approval, runId, { approved: true }))
    times.push(performance.now() - t)
    if (times.length === 1) firstDoneMs = performance.now()
    if (out.content !== true) throw new Error(`run ${runId}: unexpected content ${String(out.content)}`)
  }
  await runtime.dispose()
  process.stdout.write(JSON.stringify({ loadedMs, openMs, times, firstDoneMs }) + "\n")
}

const work = () => {
  const stallAt = Number(stallArg)
  const workflow = crashable((n) => Effect.zipRight(printStep(n), n === stallAt ? Effect.never : Effect.void))
  return Effect.runPromise(
    // the default lease: the supervisor, on this host, takes the run over without waiting for it
    Workflow.run(workflow, "go", { sessionId: arg, runId: arg, leaseDuration: "10 seconds" }).pipe(
      Effect.asVoid,
      Effect.provide(storeLayer(spec))
    )
  )
}

const supervise = () => {
  process.stdout.write("ready\n")
  return Effect.runPromise(
    Layer.launch(DurableRuns.layer({ workflows: [crashable(printStep)], leaseDuration: "1 second" })).pipe(
      Effect.provide(storeLayer(spec))
    )
  )
}

const main = mode === "continue" ? continueAll : mode === "work" ? work : mode === "supervise" ? supervise : undefined
if (main === undefined) {
  process.stderr.write(`unknown mode ${mode}\n`)
  process.exit(2)
}
main().catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`)
  process.exit(1)
})
