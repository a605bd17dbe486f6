/**
 * Mastra 0.24.9 (`@mastra/core` workflows, `@mastra/libsql` 0.16.4): the same
 * ten steps in a line (`createWorkflow(...).then(step)...commit()`), the
 * session state in Mastra's workflow state (`stateSchema`, `state`,
 * `setState`): on its own without storage, registered on a `Mastra`
 * instance with storage.
 *
 * Mastra has no sessions: a workflow's state lives for one run. A session is
 * therefore a chain of runs (`resourceId` = the session id): each run starts
 * from the state the previous run of the session ended with (`initialState`)
 * and returns its final state (`outputOptions.includeState`). With storage,
 * that state is read back from the previous run's snapshot in the store
 * (`loadWorkflowSnapshot(...).value`, one lookup by primary key), so the store
 * is the source of truth, as sessionflow's `SessionStore` is; the runner only
 * remembers which run was a session's last (an index an application would
 * keep itself; for a session it has not run, it asks the store for the
 * session's newest run). Without storage the state stays in a `Map`, as in
 * the floor.
 */
import { Mastra } from "@mastra/core/mastra"
import { InMemoryStore, type MastraStorage } from "@mastra/core/storage"
import { createStep, createWorkflow, type WorkflowRunState } from "@mastra/core/workflows"
import { LibSQLStore } from "@mastra/libsql"
import { z } from "zod"
import { pool } from "../util.ts"
import { advance, type BenchState, emptyState, STEPS } from "../workload.ts"
import type { Runner } from "./types.ts"

export interface Options {
  /** `none`: no storage; `memory`: `InMemoryStore`; `libsql`: `LibSQLStore` on `filename`. */
  readonly storage: "none" | "memory" | "libsql"
  readonly filename?: string | undefined
  /**
   * `step` (Mastra's default, `shouldPersistSnapshot` unset): the run's
   * snapshot is written when the run is created, before and after every step
   * and at the end; `run`: only the final snapshot of each run
   * (`shouldPersistSnapshot` true for a finished run only).
   */
  readonly snapshots?: "step" | "run" | undefined
  /** Mastra's `validateInputs` workflow option (off by default): zod-validates the initial state and step inputs. */
  readonly validateInputs?: boolean | undefined
  /** Steps per run (default: the workload's ten); the profiler compares 1 and 10. */
  readonly steps?: number | undefined
}

const WORKFLOW = "bench"

const State = z.object({ counter: z.number(), items: z.array(z.string()).readonly() })
const Empty = z.object({})

const allSteps = Array.from({ length: STEPS }, (_, i) =>
  createStep({
    id: `step-${i + 1}`,
    inputSchema: Empty,
    outputSchema: Empty,
    stateSchema: State,
    execute: async ({ setState, state }) => {
      setState(advance(state))
      return {}
    }
  }))

const finished = ({ workflowStatus }: { readonly workflowStatus: string }) =>
  workflowStatus !== "pending" && workflowStatus !== "running" && workflowStatus !== "waiting"

const buildWorkflow = (options: Options) => {
  const workflow = createWorkflow({
    id: WORKFLOW,
    inputSchema: Empty,
    outputSchema: Empty,
    stateSchema: State,
    options: {
      ...(options.snapshots === "run" ? { shouldPersistSnapshot: finished } : {}),
      ...(options.validateInputs === true ? { validateInputs: true } : {})
    }
  })
  // `then` changes the workflow's type parameters at every call; all steps have the same ones
  let chain = workflow
  for (const step of allSteps.slice(0, options.steps ?? STEPS)) chain = chain.then(step) as unknown as typeof workflow
  return chain.commit()
}

const makeStorage = (options: Options): MastraStorage | undefined => {
  switch (options.storage) {
    case "none":
      return undefined
    case "memory":
      return new InMemoryStore()
    case "libsql":
      if (options.filename === undefined) throw new Error("LibSQLStore needs a file")
      return new LibSQLStore({ url: `file:${options.filename}` })
  }
}

export const make = async (options: Options): Promise<Runner> => {
  const storage = makeStorage(options)
  // Without storage the workflow runs on its own, not registered on a
  // `Mastra` instance: an instance always sets up its (OpenTelemetry)
  // telemetry, `enabled: false` or not, and the engine then wraps every step
  // in `traceMethod`, which serialises the step's arguments and result
  // (`boundedStringify`) for span attributes; that is most of the instance's
  // cost per step. Storage needs the instance.
  const workflow = storage === undefined
    ? buildWorkflow(options)
    : new Mastra({
      workflows: { [WORKFLOW]: buildWorkflow(options) },
      storage,
      // nothing exports telemetry here; disabled so that Mastra does not warn
      telemetry: { enabled: false },
      logger: false
    }).getWorkflow(WORKFLOW)
  if (storage !== undefined) await storage.init()

  /** no storage: the sessions' states */
  const states = new Map<string, BenchState>()
  /** with storage: each session's last run */
  const latest = new Map<string, string>()

  const snapshotOf = async (sessionId: string) => {
    if (storage === undefined) return undefined
    const runId = latest.get(sessionId)
    if (runId === undefined) {
      // a session this runner has not run (a database made by another runner):
      // its newest run, by the store's own listing
      const { runs } = await storage.getWorkflowRuns({ workflowName: WORKFLOW, resourceId: sessionId, limit: 1 })
      const run = runs[0]
      if (run === undefined) return undefined
      latest.set(sessionId, run.runId)
      return typeof run.snapshot === "string" ? JSON.parse(run.snapshot) as WorkflowRunState : run.snapshot
    }
    const snapshot = await storage.loadWorkflowSnapshot({ workflowName: WORKFLOW, runId })
    if (snapshot === null) throw new Error(`no snapshot for run ${runId} of ${sessionId}`)
    return snapshot
  }
  const load = async (sessionId: string): Promise<BenchState | undefined> =>
    storage === undefined ? states.get(sessionId) : (await snapshotOf(sessionId))?.value as BenchState | undefined

  const runOnce = async (sessionId: string, from?: BenchState) => {
    const initialState = from ?? (await load(sessionId)) ?? emptyState()
    const run = await workflow.createRunAsync({ resourceId: sessionId })
    const result = await run.start({ inputData: {}, initialState, outputOptions: { includeState: true } })
    if (result.status !== "success" || result.state === undefined) {
      throw new Error(`Mastra run ${run.runId} ended ${result.status}`)
    }
    if (storage === undefined) states.set(sessionId, result.state as BenchState)
    else latest.set(sessionId, run.runId)
  }

  return {
    run: async (sessionId, runs) => {
      for (let i = 0; i < runs; i++) await runOnce(sessionId)
    },
    seed: (sessionId, state) => runOnce(sessionId, state),
    runSessions: (sessionIds, concurrency) => pool(sessionIds, concurrency, (id) => runOnce(id)),
    prefillHistory: async (sessionId, runs) => {
      // Mastra's history is its runs' snapshots: one row per earlier run
      // (copies of the session's last snapshot under new run ids), leaving
      // the session's last run, hence its state, alone
      const snapshot = await snapshotOf(sessionId)
      if (snapshot === undefined || storage === undefined) throw new Error(`no stored run for ${sessionId}`)
      for (let i = 0; i < runs; i++) {
        const runId = `prefill-${sessionId}-${i}`
        await storage.persistWorkflowSnapshot({
          workflowName: WORKFLOW,
          runId,
          resourceId: sessionId,
          snapshot: { ...snapshot, runId }
        })
      }
    },
    counter: async (sessionId) => (await load(sessionId))?.counter ?? 0,
    close: async () => {
      if (storage instanceof LibSQLStore) (storage as unknown as { client: { close: () => void } }).client.close()
    }
  }
}
