/**
 * Scenario 8 — an expense assistant that records expenses in the session
 * state and waits for a person's approval above a limit. `record_expense` is
 * an `@effect/ai` tool made with `Agent.needsApproval`: a call above
 * {@link LIMIT} EUR pauses the run (`RunPaused`, nothing committed) until
 * someone approves or rejects it — in this process (y/n on the terminal) or
 * later, in another one (`npm start -- runs continue <runId> --approve`).
 * Nobody answers within `APPROVAL_TIMEOUT` (two days): the expense is rejected
 * ("not approved in time") by whichever process runs `DurableRuns` then.
 * The agent then carries on where it stood, without asking the model again.
 * The tools are in `Approval.tools.ts`, the scripted replies in
 * `Approval.offline.ts`.
 *
 * @since 0.1.0
 */
import { Agent, Step, Workflow } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import { offlineModel } from "./Approval.offline.js"
import { Expenses, ExpenseTools, ExpenseToolsLive, LIMIT } from "./Approval.tools.js"
import * as Output from "./Output.js"
import * as Scenario from "./Scenario.js"

export { expensesIn, offlineModel } from "./Approval.offline.js"
export * from "./Approval.tools.js"

// -- agent and workflow ----------------------------------------------------------

export const expenseAssistant = Agent.make({
  name: "Expense Assistant",
  instructions: `You record the user's expenses with record_expense: one call per expense, the amount in EUR.
Expenses above ${LIMIT} EUR wait for a manager's approval; a rejected one (or one not approved in time) is not recorded.
Then tell the user what was recorded, what was rejected (and why), and the total.`,
  tools: ExpenseTools
})

export const expenseWorkflow = Workflow.make({
  name: "Expense Approval Workflow",
  state: Expenses,
  sessionState: { expenses: [], total: 0 },
  steps: [
    Step.agent("record_expenses", expenseAssistant, {
      description: "Record the expenses (with approval above the limit)"
    })
  ]
})

// -- main: one request; the dinner waits for a person --------------------------

export const input = "Please record my trip: 35 EUR for the taxi to the airport and 240 EUR for the team dinner."

export const scenario = Scenario.make({
  name: "approval",
  cookbook: "tool_approval",
  aliases: ["expenses", "expense", "human-in-the-loop", "hitl"],
  description: `An expense assistant; expenses above ${LIMIT} EUR pause the run until a person approves (any process)`,
  workflows: [expenseWorkflow],
  offlineModel,
  layer: ExpenseToolsLive
}, ({ db, dbOption }) =>
  Effect.gen(function*() {
    const sessionId = Scenario.newSessionId("expenses")
    yield* Output.heading(`Recording expenses (above ${LIMIT} EUR a manager approves)`)
    const paused = yield* Workflow.stream(expenseWorkflow, input, { sessionId }).pipe(Output.print)
    if (!(yield* Scenario.answerPauses(expenseWorkflow, paused, dbOption))) return
    yield* Output.state("Workflow session state", yield* Workflow.getSessionState(expenseWorkflow, sessionId))
    yield* Output.note(`Stored as session ${sessionId} in ${db}:  npm start -- sessions show ${dbOption} ${sessionId}`)
  }))

export const main = scenario.main
