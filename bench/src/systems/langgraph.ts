/**
 * LangGraph.js: a `StateGraph` with the same ten nodes in a line, one thread
 * per session, checkpointed by `MemorySaver`, `SqliteSaver` or `PostgresSaver`.
 */
import { Annotation, END, MemorySaver, START, StateGraph } from "@langchain/langgraph"
import { type BaseCheckpointSaver, uuid6 } from "@langchain/langgraph-checkpoint"
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres"
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite"
import { pool } from "../util.ts"
import { advance, type BenchState, emptyState, STEPS } from "../workload.ts"
import { databaseUrl, freshSchema } from "./postgres.ts"
import type { Runner } from "./types.ts"

const State = Annotation.Root({
  counter: Annotation<number>(),
  items: Annotation<ReadonlyArray<string>>()
})

const buildGraph = () => {
  const graph = new StateGraph(State) as any
  for (let i = 1; i <= STEPS; i++) graph.addNode(`step-${i}`, (s: BenchState) => advance(s))
  graph.addEdge(START, "step-1")
  for (let i = 1; i < STEPS; i++) graph.addEdge(`step-${i}`, `step-${i + 1}`)
  graph.addEdge(`step-${STEPS}`, END)
  return graph as StateGraph<typeof State.spec>
}

export type Durability = "async" | "sync" | "exit"

export interface Options {
  /** `undefined`: `MemorySaver`; else the SQLite file for `SqliteSaver`. */
  readonly filename?: string | undefined
  /** LangGraph's checkpointing mode; its default is "async" (a checkpoint per step, saved in the background). */
  readonly durability?: Durability | undefined
  /** `PostgresSaver` on a fresh schema of the bench database (named after `filename`) instead of `SqliteSaver`. */
  readonly postgres?: boolean | undefined
}

const openSaver = async (options: Options): Promise<{ saver: BaseCheckpointSaver; close: () => Promise<void> }> => {
  if (options.filename === undefined) return { saver: new MemorySaver(), close: async () => {} }
  if (options.postgres === true) {
    const { drop, schema } = await freshSchema(options.filename)
    const saver = PostgresSaver.fromConnString(databaseUrl(), { schema })
    await saver.setup()
    return {
      saver,
      close: async () => {
        await saver.end()
        await drop()
      }
    }
  }
  const saver = SqliteSaver.fromConnString(options.filename)
  return {
    saver,
    close: async () => {
      saver.db.close()
    }
  }
}

export const make = async (options: Options): Promise<Runner> => {
  const { close, saver } = await openSaver(options)
  const app = buildGraph().compile({ checkpointer: saver })
  const durability = options.durability ?? "async"
  const config = (sessionId: string) => ({ configurable: { thread_id: sessionId }, durability })
  // A new thread starts from the input, an existing one from its checkpoint
  // (then the input adds nothing). Threads known to exist:
  const known = new Set<string>()
  const runOnce = async (sessionId: string) => {
    if (!known.has(sessionId) && (await saver.getTuple({ configurable: { thread_id: sessionId } })) !== undefined) {
      known.add(sessionId)
    }
    const input = known.has(sessionId) ? {} : emptyState()
    known.add(sessionId)
    return app.invoke(input, config(sessionId))
  }
  return {
    run: async (sessionId, runs) => {
      for (let i = 0; i < runs; i++) await runOnce(sessionId)
    },
    seed: async (sessionId, state) => {
      known.add(sessionId)
      await app.invoke(state, config(sessionId))
    },
    runSessions: (sessionIds, concurrency) =>
      // new threads
      pool(sessionIds, concurrency, (id) => {
        known.add(id)
        return app.invoke(emptyState(), config(id))
      }),
    prefillHistory: async (sessionId, runs) => {
      // LangGraph's history is its checkpoints: a run of this graph leaves
      // one per super-step (the input, then each node). Re-put the latest
      // checkpoint that many times (same state, new ids), in one transaction.
      const latest = await saver.getTuple({ configurable: { thread_id: sessionId } })
      if (latest === undefined) throw new Error(`no checkpoint for ${sessionId}`)
      const db = saver instanceof SqliteSaver ? saver.db : undefined
      db?.exec("BEGIN")
      let parent = latest.config
      for (let i = 0; i < runs * (STEPS + 1); i++) {
        parent = await saver.put(
          parent,
          { ...latest.checkpoint, id: uuid6(-1), ts: new Date().toISOString() },
          { ...latest.metadata!, step: i },
          latest.checkpoint.channel_versions
        )
      }
      db?.exec("COMMIT")
    },
    counter: async (sessionId) => (await app.getState(config(sessionId))).values.counter ?? 0,
    close
  }
}
