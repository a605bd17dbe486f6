/**
 * W7's workflow: the bench workload (ten steps on a typed state) that both
 * the server and the in-process runs execute.
 */
import * as Schema from "effect/Schema"
import { SessionState, Step, Workflow } from "../../packages/core/src/index.ts"
import { advance, emptyState, STEPS } from "./workload.ts"

class Bench extends SessionState.Tag("bench/W7State")<Bench>()({
  counter: Schema.Number,
  items: Schema.Array(Schema.String)
}) {}

export const workflow = Workflow.make({
  name: "bench",
  state: Bench,
  sessionState: emptyState(),
  steps: Array.from({ length: STEPS }, (_, i) => Step.make(`step-${i + 1}`, () => Bench.update(advance)))
})
