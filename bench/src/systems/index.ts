/**
 * The systems under test. Their modules load on first use, so that a child
 * process measuring one system's memory does not load the others.
 */
import type { System } from "../measure.ts"
import type * as FloorModule from "./floor.ts"
import type * as LangGraphModule from "./langgraph.ts"
import type * as SessionflowModule from "./sessionflow.ts"

const Sessionflow = {
  make: async (o: SessionflowModule.Options) => (await import("./sessionflow.ts")).make(o)
}
const LangGraph = {
  make: async (o: LangGraphModule.Options) => (await import("./langgraph.ts")).make(o)
}
const Floor = {
  make: async (o: FloorModule.Options) => (await import("./floor.ts")).make(o)
}

export const SF = "sessionflow"
export const SF_UNTYPED = "sessionflow (untyped state)"
export const SF_NORMAL = "sessionflow (synchronous=NORMAL)"
export const LG = "LangGraph.js"
export const LG_EXIT = "LangGraph.js (durability: exit)"
export const FLOOR = "floor"
export const FLOOR_FULL = "floor (synchronous=FULL)"
export const SDK = "openai SDK directly"

export const sessionflow: System = { name: SF, open: (filename) => Sessionflow.make({ filename, typed: true }) }
export const sessionflowUntyped: System = {
  name: SF_UNTYPED,
  open: (filename) => Sessionflow.make({ filename, typed: false })
}
export const sessionflowNormal: System = {
  name: SF_NORMAL,
  open: (filename) => Sessionflow.make({ filename, typed: true, synchronous: "NORMAL" })
}
export const langgraph: System = { name: LG, open: (filename) => LangGraph.make({ filename }) }
export const langgraphExit: System = {
  name: LG_EXIT,
  open: (filename) => LangGraph.make({ filename, durability: "exit" })
}
export const floor: System = { name: FLOOR, open: (filename) => Floor.make({ filename }) }
export const floorFull: System = {
  name: FLOOR_FULL,
  open: (filename) => Floor.make({ filename, synchronous: "FULL" })
}
export const floorWithHistory: System = {
  name: FLOOR,
  open: (filename) => Floor.make({ filename, history: true })
}

export const byName: Readonly<Record<string, System>> = {
  [SF]: sessionflow,
  [SF_UNTYPED]: sessionflowUntyped,
  [SF_NORMAL]: sessionflowNormal,
  [LG]: langgraph,
  [LG_EXIT]: langgraphExit,
  [FLOOR]: floor,
  [FLOOR_FULL]: floorFull
}
