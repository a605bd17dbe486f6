/**
 * The scripted model of the expense assistant (scenario 8): it records every
 * expense the message names ("35 EUR for the taxi", "€240 for the team
 * dinner"), then reports what was recorded and what a person rejected.
 *
 * @since 0.1.0
 */
import { StepOutput, TestModel } from "@sessionflow/core"
import * as Offline from "./Offline.js"

/** The expenses a message names: an amount in EUR and what it was for. */
export const expensesIn = (text: string): ReadonlyArray<{ readonly description: string; readonly amount: number }> =>
  [...text.matchAll(
    new RegExp(
      String.raw`(?:€\s*(\d+(?:\.\d+)?)|(\d+(?:\.\d+)?)\s*(?:EUR|€|euros?))\s+(?:for|on)\s+` +
        String.raw`(.+?)(?=\s*(?:[,;]|\.(?:\s|$)|\band\s+(?:€|\d)|$))`,
      "gi"
    )
  )]
    .map((m) => ({
      amount: Number(m[1] ?? m[2]),
      description: m[3]!.trim().replace(/^(?:the|a|an|my|our)\s+/i, "")
    }))

const report = (request: TestModel.Request): string => {
  const lines: Array<string> = []
  for (const call of Offline.pastCalls(request)) {
    const result = StepOutput.contentText(call.result)
    if (call.name !== "record_expense") {
      lines.push(result)
      continue
    }
    const { amount, description } = call.params as { readonly description: string; readonly amount: number }
    const rejection = /^Rejected by a person(?:: (.*))?/.exec(result)
    lines.push(
      rejection === null
        ? `✓ ${description}: ${amount} EUR recorded.`
        : `✗ ${description}: ${amount} EUR was not recorded — the manager rejected it${
          rejection[1] === undefined ? "" : ` (${rejection[1]})`
        }.`
    )
  }
  const total = Offline.resultLines(request).flatMap((r) => /\(total (.+) EUR\)/.exec(r)?.slice(1) ?? []).at(-1)
  if (total !== undefined) lines.push(`Your expenses now total ${total} EUR.`)
  return lines.join("\n")
}

export const offlineModel = TestModel.layer((request) => {
  if (request.turn > 0) return TestModel.text(report(request))
  const expenses = expensesIn(request.lastUserMessage ?? "")
  return expenses.length === 0
    ? TestModel.toolCalls(["list_expenses", {}])
    : TestModel.toolCalls(...expenses.map((e) => ["record_expense", e] as const))
})
