/**
 * The scripted model of the shopping list (scenario 1): the assistant adds
 * and removes what the request names (and lists when asked); the manager
 * lists, or clears and lists.
 *
 * @since 0.1.0
 */
import { TestModel } from "@sessionflow/core"
import * as Offline from "./Offline.js"

const listRequest = new RegExp(
  String.raw`\b(show|display|view|see|what'?s left|what'?s on)\b|` +
    String.raw`\b(complete|full|whole) list\b|\blist (it|them|everything|all)\b`,
  "i"
)
const wantsList = (text: string) => listRequest.test(text)
const wantsClear = (text: string) => /\b(clear|empty|remove all|remove everything|delete all)\b/i.test(text)

/** The items a request asks to add ("add milk, bread, and eggs to …"). */
export const itemsToAdd = (text: string): ReadonlyArray<string> => {
  const match = /\badd\s+(.+?)(?:\s+to\s+(?:my|the|our)\b|[,;]?\s*then\b|[.!?]|$)/i.exec(text)
  return match === null ? [] : Offline.splitList(match[1]!)
}

/** The items a request asks to remove ("remove bread from …"). */
export const itemsToRemove = (text: string): ReadonlyArray<string> => {
  const match = /\bremove\s+(?!all\b|everything\b)(.+?)(?:\s+from\b|[,;]|\s+and\s+(?:show|list|tell)\b|[.!?]|$)/i.exec(
    text
  )
  return match === null ? [] : Offline.splitList(match[1]!)
}

const assistantTurn = (request: TestModel.Request): TestModel.Reply => {
  const text = Offline.userRequest(request)
  if (request.turn === 0) {
    const calls: Array<readonly [string, unknown]> = [
      ...itemsToAdd(text).map((item) => ["add_item", { item }] as const),
      ...itemsToRemove(text).map((item) => ["remove_item", { item }] as const)
    ]
    if (calls.length > 0) {
      if (wantsList(text)) calls.push(["list_items", {}])
      return TestModel.toolCalls(...calls)
    }
    if (wantsClear(text)) {
      return TestModel.text("Clearing the whole list is the List Manager's job, so I'm handing this over to them.")
    }
    return TestModel.toolCalls(["list_items", {}])
  }
  const results = Offline.resultLines(request)
  const added = results.flatMap((r) => /^Added '(.+)' to/.exec(r)?.slice(1) ?? [])
  const removed = results.flatMap((r) => /^Removed '(.+)' from/.exec(r)?.slice(1) ?? [])
  const list = results.find((r) => r.startsWith("Shopping list"))
  const other = results.filter((r) => !/^(Added|Removed) '/.test(r) && !r.startsWith("Shopping list"))
  const lines = [
    added.length > 0 ? `I've added ${Offline.joinAnd(added)} to your list.` : undefined,
    removed.length > 0 ? `I've removed ${Offline.joinAnd(removed)}.` : undefined,
    ...other,
    list === undefined ? undefined : `Here's the complete list now:\n${list}`
  ].filter((l) => l !== undefined)
  return TestModel.text(lines.join("\n"))
}

const managerTurn = (request: TestModel.Request): TestModel.Reply => {
  const text = Offline.userRequest(request)
  if (request.turn === 0) {
    return wantsClear(text)
      ? TestModel.toolCalls(["remove_all_items", {}], ["list_items", {}])
      : TestModel.toolCalls(["list_items", {}])
  }
  const results = Offline.resultLines(request)
  const list = results[results.length - 1] ?? ""
  return TestModel.text(
    wantsClear(text)
      ? `All cleared: ${results[0] ?? ""} Confirmed — ${list.charAt(0).toLowerCase()}${list.slice(1)}`
      : `Here is your current list.\n${list}`
  )
}

export const offlineModel = TestModel.layer((request) =>
  request.agent === "List Manager" ? managerTurn(request) : assistantTurn(request)
)
