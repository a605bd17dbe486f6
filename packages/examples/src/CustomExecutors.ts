/**
 * Scenario 3 — state from plain executor functions, and a streaming executor
 * (agno's `state_in_function`): the content workflow (`ContentPlanning.ts`)
 * and its streaming variant (`StreamingContentPlanning.ts`), each run twice
 * on a session of its own, in the session table `workflow_session`.
 *
 * @since 0.1.0
 */
import { Workflow } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { contentWorkflow } from "./ContentPlanning.js"
import { offlineModel } from "./CustomExecutors.offline.js"
import * as Output from "./Output.js"
import * as Scenario from "./Scenario.js"
import { streamingContentWorkflow } from "./StreamingContentPlanning.js"

export * from "./ContentPlanning.js"
export { offlineModel } from "./CustomExecutors.offline.js"
export * from "./StreamingContentPlanning.js"

// the session table of this scenario (as in the agno cookbook)
export const TABLE = "workflow_session"

export const inputs = ["AI trends in 2024", "Machine Learning automation tools"] as const

const runTwice = (workflow: typeof contentWorkflow | typeof streamingContentWorkflow, streaming: boolean) =>
  Effect.gen(function*() {
    const sessionId = Scenario.newSessionId(streaming ? "streaming" : "content")
    for (const [i, input] of inputs.entries()) {
      const heading = `${i === 0 ? "First" : "Second"} ${streaming ? "Streaming " : ""}Workflow Run${
        i === 0 ? "" : " (Same Session)"
      }`
      yield* Output.heading(heading)
      yield* Workflow.stream(workflow, input, { sessionId }).pipe(Output.print)
      const state = yield* Workflow.getSessionState(workflow, sessionId)
      yield* Output.state(i === 0 ? "Session state after the first run" : "Final session state", state)
    }
    return sessionId
  })

export const scenario = Scenario.make({
  name: "custom-executors",
  cookbook: "state_in_function",
  aliases: ["executors", "functions", "function", "streaming"],
  description: "Function steps count and store content plans; a streaming executor forwards the planner's text",
  workflows: [contentWorkflow, streamingContentWorkflow],
  offlineModel,
  layer: Layer.empty,
  table: TABLE
}, ({ db, dbOption, table }) =>
  Effect.gen(function*() {
    const plain = yield* runTwice(contentWorkflow, false)
    yield* Output.say()
    yield* Output.note(
      "Now the streaming variant: its planning step is a Step.stream " +
        "executor that forwards the planner's text deltas itself."
    )
    const streaming = yield* runTwice(streamingContentWorkflow, true)
    yield* Output.say()
    yield* Output.note(`Sessions ${plain} and ${streaming} are in table ${table} of ${db}:`)
    yield* Output.note(`  npm start -- sessions list ${dbOption} --table ${table}`)
  }))

export const main = scenario.main
