/**
 * The expenses' state and tools (scenario 8): `record_expense`, which waits
 * for a person's approval above {@link LIMIT} EUR (`Agent.needsApproval`),
 * for {@link APPROVAL_TIMEOUT} at most, and `list_expenses`.
 *
 * @since 0.1.0
 */
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import { Agent, SessionState } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/** Expenses above this amount (EUR) wait for a manager's approval. */
export const LIMIT = 100

/**
 * How long an expense waits for the manager: then it is rejected ("not
 * approved in time"), by whichever process runs `DurableRuns` (or a
 * `Workflow.recover`) when the time comes.
 */
export const APPROVAL_TIMEOUT = "2 days"

export const Expense = Schema.Struct({ description: Schema.String, amount: Schema.Number })

export class Expenses extends SessionState.Tag("@sessionflow/examples/Expenses")<Expenses>()({
  expenses: Schema.Array(Expense),
  total: Schema.Number
}) {}

export const RecordExpense = Agent.needsApproval(
  Tool.make("record_expense", {
    description: `Record one expense (amount in EUR). Amounts above ${LIMIT} ` +
      `EUR wait for a manager's approval (${APPROVAL_TIMEOUT} at most).`,
    parameters: {
      description: Schema.String.annotations({ description: "What the expense was for, e.g. 'taxi to the airport'" }),
      amount: Schema.Number.annotations({ description: "The amount in EUR" })
    },
    success: Schema.String,
    dependencies: [Expenses]
  }),
  ({ amount }) => amount > LIMIT,
  { timeout: APPROVAL_TIMEOUT }
)

export const ListExpenses = Tool.make("list_expenses", {
  description: "List the recorded expenses and their total.",
  success: Schema.String,
  dependencies: [Expenses]
})

export const ExpenseTools = Toolkit.make(RecordExpense, ListExpenses)

export const ExpenseToolsLive = ExpenseTools.toLayer({
  record_expense: ({ amount, description }) =>
    Expenses.modify((s) => {
      const total = s.total + amount
      return [`Recorded '${description}': ${amount} EUR (total ${total} EUR).`, {
        expenses: [...s.expenses, { description, amount }],
        total
      }]
    }),
  list_expenses: () =>
    Effect.map(Expenses.get, (s) =>
      s.expenses.length === 0
        ? "No expenses recorded."
        : [...s.expenses.map((e) => `- ${e.description}: ${e.amount} EUR`), `Total: ${s.total} EUR`].join("\n"))
})
