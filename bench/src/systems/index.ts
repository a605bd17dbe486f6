/**
 * The systems under test. Their modules load on first use, so that a child
 * process measuring one system's memory does not load the others.
 */
import type { System } from "../measure.ts"
import type * as FloorModule from "./floor.ts"
import type * as LangGraphModule from "./langgraph.ts"
import type * as MastraModule from "./mastra.ts"
import type * as PostgresModule from "./postgres.ts"
import type * as SessionflowModule from "./sessionflow.ts"

const Sessionflow = {
  make: async (o: SessionflowModule.Options) => (await import("./sessionflow.ts")).make(o)
}
const LangGraph = {
  make: async (o: LangGraphModule.Options) => (await import("./langgraph.ts")).make(o)
}
const MastraSystem = {
  make: async (o: MastraModule.Options) => (await import("./mastra.ts")).make(o)
}
const Floor = {
  make: async (o: FloorModule.Options) => (await import("./floor.ts")).make(o)
}
const PostgresFloor = {
  make: async (o: PostgresModule.FloorOptions) => (await import("./postgres.ts")).floor(o)
}

/** A persisted system needs the fresh file (for PostgreSQL: the name of its fresh schema). */
const persisted = (file: string | undefined): string => {
  if (file === undefined) throw new Error("a PostgreSQL system runs persisted workloads only")
  return file
}

export const SF = "sessionflow"
export const SF_UNTYPED = "sessionflow (untyped state)"
export const SF_NORMAL = "sessionflow (synchronous=NORMAL)"
export const SF_CHANGES = "sessionflow (persist: changes)"
export const SF_EVENTS = "sessionflow (events stored)"
export const LG = "LangGraph.js"
export const LG_EXIT = "LangGraph.js (durability: exit)"
export const MASTRA = "Mastra (no storage)"
export const MASTRA_VALIDATE = "Mastra (no storage, validateInputs)"
export const MASTRA_MEMORY = "Mastra (InMemoryStore, per-step snapshots)"
export const MASTRA_MEMORY_RUN = "Mastra (InMemoryStore, per-run snapshot)"
export const MASTRA_LIBSQL = "Mastra (LibSQLStore, per-step snapshots)"
export const MASTRA_LIBSQL_RUN = "Mastra (LibSQLStore, per-run snapshot)"
export const FLOOR = "floor"
export const FLOOR_FULL = "floor (synchronous=FULL)"
export const FLOOR_READ = "floor (read+upsert)"
export const FLOOR_READ_FULL = "floor (read+upsert, synchronous=FULL)"
export const FLOOR_STEPS = "floor (the steps alone)"
export const SDK = "openai SDK directly"
export const SF_PG = "sessionflow (PostgreSQL)"
const SF_PG_UNTYPED = "sessionflow (PostgreSQL, untyped state)"
export const LG_PG = "LangGraph.js (PostgresSaver)"
export const LG_PG_EXIT = "LangGraph.js (PostgresSaver, durability: exit)"
export const FLOOR_PG = "floor (PostgreSQL upsert)"
export const FLOOR_PG_READ = "floor (PostgreSQL read+upsert)"

export const sessionflow: System = { name: SF, open: (filename) => Sessionflow.make({ filename, typed: true }) }
export const sessionflowUntyped: System = {
  name: SF_UNTYPED,
  open: (filename) => Sessionflow.make({ filename, typed: false })
}
export const sessionflowNormal: System = {
  name: SF_NORMAL,
  open: (filename) => Sessionflow.make({ filename, typed: true, synchronous: "NORMAL" })
}
export const sessionflowEvents: System = {
  name: SF_EVENTS,
  open: (filename) => Sessionflow.make({ filename, typed: true, events: "stored" })
}
export const sessionflowChanges: System = {
  name: SF_CHANGES,
  open: (filename) => Sessionflow.make({ filename, typed: true, persist: "changes" })
}
export const langgraph: System = { name: LG, open: (filename) => LangGraph.make({ filename }) }
export const langgraphExit: System = {
  name: LG_EXIT,
  open: (filename) => LangGraph.make({ filename, durability: "exit" })
}
export const mastra: System = { name: MASTRA, open: () => MastraSystem.make({ storage: "none" }) }
export const mastraValidate: System = {
  name: MASTRA_VALIDATE,
  open: () => MastraSystem.make({ storage: "none", validateInputs: true })
}
export const mastraMemory: System = { name: MASTRA_MEMORY, open: () => MastraSystem.make({ storage: "memory" }) }
export const mastraMemoryRun: System = {
  name: MASTRA_MEMORY_RUN,
  open: () => MastraSystem.make({ storage: "memory", snapshots: "run" })
}
export const mastraLibsql: System = {
  name: MASTRA_LIBSQL,
  open: (filename) => MastraSystem.make({ storage: "libsql", filename })
}
export const mastraLibsqlRun: System = {
  name: MASTRA_LIBSQL_RUN,
  open: (filename) => MastraSystem.make({ storage: "libsql", filename, snapshots: "run" })
}
export const floor: System = { name: FLOOR, open: (filename) => Floor.make({ filename }) }
export const floorFull: System = {
  name: FLOOR_FULL,
  open: (filename) => Floor.make({ filename, synchronous: "FULL" })
}
/** The steps over an in-memory object, even in a persisted workload: what the steps alone cost. */
export const floorSteps: System = { name: FLOOR_STEPS, open: () => Floor.make({}) }
export const floorRead: System = { name: FLOOR_READ, open: (filename) => Floor.make({ filename, read: true }) }
export const floorReadFull: System = {
  name: FLOOR_READ_FULL,
  open: (filename) => Floor.make({ filename, read: true, synchronous: "FULL" })
}
export const sessionflowPg: System = {
  name: SF_PG,
  open: (file) => Sessionflow.make({ filename: persisted(file), typed: true, postgres: true })
}
export const sessionflowPgUntyped: System = {
  name: SF_PG_UNTYPED,
  open: (file) => Sessionflow.make({ filename: persisted(file), typed: false, postgres: true })
}
export const langgraphPg: System = {
  name: LG_PG,
  open: (file) => LangGraph.make({ filename: persisted(file), postgres: true })
}
export const langgraphPgExit: System = {
  name: LG_PG_EXIT,
  open: (file) => LangGraph.make({ filename: persisted(file), postgres: true, durability: "exit" })
}
export const floorPg: System = { name: FLOOR_PG, open: (file) => PostgresFloor.make({ file: persisted(file) }) }
export const floorPgRead: System = {
  name: FLOOR_PG_READ,
  open: (file) => PostgresFloor.make({ file: persisted(file), read: true })
}
export const floorWithHistory: System = {
  name: FLOOR,
  open: (filename) => Floor.make({ filename, history: true })
}

/**
 * The read+upsert floor with the same `synchronous` setting as `system`
 * (FULL: sessionflow's `SqliteSessionStore.layer` and LangGraph's
 * `SqliteSaver` leave SQLite's default; NORMAL: Mastra's `LibSQLStore` sets
 * it, and so does the NORMAL variant of sessionflow).
 */
export const readFloorFor = (system: string): string | undefined =>
  system === FLOOR_READ || system === FLOOR_READ_FULL || system === FLOOR || system === FLOOR_FULL ||
    system === FLOOR_STEPS
    ? undefined
    : system === SF_NORMAL || system.startsWith("Mastra")
    ? FLOOR_READ
    : FLOOR_READ_FULL

export const byName: Readonly<Record<string, System>> = {
  [SF]: sessionflow,
  [SF_UNTYPED]: sessionflowUntyped,
  [SF_NORMAL]: sessionflowNormal,
  [SF_CHANGES]: sessionflowChanges,
  [LG]: langgraph,
  [LG_EXIT]: langgraphExit,
  [MASTRA_LIBSQL]: mastraLibsql,
  [MASTRA_LIBSQL_RUN]: mastraLibsqlRun,
  [SF_PG]: sessionflowPg,
  [SF_PG_UNTYPED]: sessionflowPgUntyped,
  [LG_PG]: langgraphPg,
  [LG_PG_EXIT]: langgraphPgExit,
  [FLOOR_PG]: floorPg,
  [FLOOR_PG_READ]: floorPgRead,
  [FLOOR]: floor,
  [FLOOR_FULL]: floorFull,
  [FLOOR_READ]: floorRead,
  [FLOOR_READ_FULL]: floorReadFull,
  [FLOOR_STEPS]: floorSteps
}
