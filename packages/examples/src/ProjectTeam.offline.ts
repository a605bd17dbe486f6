/**
 * The scripted model of the project team (scenario 6): the leader adds and
 * deletes what the request names and has the coordinator confirm; the
 * StatusManager applies status changes and reassignments.
 *
 * @since 0.1.0
 */
import { TestModel } from "@sessionflow/core"
import * as Offline from "./Offline.js"

/** The additions a request names: "<priority> priority step (called) '<name>' assigned to <who>". */
export const stepsToAdd = (text: string): ReadonlyArray<{ step_name: string; assignee: string; priority: string }> =>
  Array.from(
    text.matchAll(
      new RegExp(
        String.raw`\b(high|medium|low)\s+priority\s+(?:step\s+)?(?:called\s+|named\s+)?'([^']+)'` +
          String.raw`(?:\s+step)?\s+assigned\s+to\s+([\w-]+)`,
        "gi"
      )
    ),
    (m) => ({ step_name: m[2]!, assignee: m[3]!, priority: m[1]!.toLowerCase() })
  )

/** The deletions a request names: "delete (the) '<name>'". */
export const stepsToDelete = (text: string): ReadonlyArray<string> =>
  Array.from(text.matchAll(/\b(?:delete|remove)\s+(?:the\s+)?(?:step\s+)?'([^']+)'/gi), (m) => m[1]!)

/** The status changes and reassignments a request names, in order ("it" is the step named just before). */
export const statusChanges = (text: string): ReadonlyArray<readonly [string, Record<string, string>]> => {
  const out: Array<readonly [string, Record<string, string>]> = []
  let last: string | undefined
  const pattern = new RegExp(
    String.raw`\breassign\s+'([^']+)'\s+to\s+([\w-]+)|` +
      String.raw`\bmark\s+(?:'([^']+)'|it)\s+as\s+(pending|in_progress|completed|blocked|cancelled)` +
      String.raw`(?:\s+with\s+notes?\s+'([^']+)')?`,
    "gi"
  )
  for (const m of text.matchAll(pattern)) {
    if (m[1] !== undefined) {
      last = m[1]
      out.push(["assign_step", { step_name: m[1], new_assignee: m[2]! }])
    } else {
      const step_name = m[3] ?? last
      if (step_name === undefined) continue
      last = step_name
      out.push(["update_step_status", { step_name, new_status: m[4]!, ...(m[5] === undefined ? {} : { notes: m[5] }) }])
    }
  }
  return out
}

const leaderTurn = (request: TestModel.Request): TestModel.Reply => {
  const text = Offline.userRequest(request)
  const past = Offline.pastCalls(request)
  if (request.turn === 0) {
    const calls = [
      ...stepsToDelete(text).map((step_name) => ["delete_step", { step_name }] as const),
      ...stepsToAdd(text).map((add) => ["add_step", add] as const)
    ]
    return calls.length > 0
      ? TestModel.toolCalls(...calls)
      : TestModel.text("No steps to add or delete. Status updates are handled by the status manager in the next step.")
  }
  if (!past.some((c) => c.name === "delegate_task_to_member")) {
    const changes = past.map((c) => {
      const params = c.params as { readonly step_name?: string }
      return `${c.name === "add_step" ? "added" : "deleted"} '${params.step_name ?? "?"}'`
    })
    return TestModel.toolCalls(["delegate_task_to_member", {
      member_name: "StepCoordinator",
      task: `Please confirm: ${Offline.joinAnd(changes)}.`
    }])
  }
  const results = past.filter((c) => c.name !== "delegate_task_to_member").map((c) => String(c.result))
  return TestModel.text(results.join("\n"))
}

const statusTurn = (request: TestModel.Request): TestModel.Reply => {
  if (request.turn === 0) {
    const calls = statusChanges(Offline.userRequest(request))
    return calls.length > 0
      ? TestModel.toolCalls(...calls)
      : TestModel.text("No status changes or reassignments requested.")
  }
  return TestModel.text(Offline.pastCalls(request).map((c) => String(c.result)).join("\n"))
}

export const offlineModel = TestModel.layer((request) => {
  switch (request.agent) {
    case "StatusManager":
      return statusTurn(request)
    case "StepCoordinator":
      return TestModel.text(
        `Confirmed — ${
          (request.lastUserMessage ?? "").replace(/^Please confirm:\s*/i, "").replace(/\.$/, "")
        }. Status changes go to the StatusManager next.`
      )
    case "StepManager":
      return TestModel.text("Acknowledged.")
    default:
      return leaderTurn(request)
  }
})
