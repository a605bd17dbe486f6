/**
 * The scripted model of the job tracker (scenario 2): the extractor answers
 * with {@link extractApplication} of the message; the tracker saves it once,
 * lists, and reports.
 *
 * @since 0.1.0
 */
import { TestModel } from "@sessionflow/core"
import type { JobApplication } from "./JobTracker.js"
import * as Offline from "./Offline.js"

/** A heuristic extraction of an application from a message, as the scripted extractor replies it. */
export const extractApplication = (message: string): JobApplication => {
  const company = /\b(?:at|with|for)\s+([A-Z][\w&.'-]*(?:\s+[A-Z][\w&.'-]*)*)/.exec(message)?.[1]?.replace(/[.,]$/, "")
  const role =
    /\b(?:an?|the)\s+((?:[A-Z][\w+#./-]*\s+)*[A-Z][\w+#./-]*)\s+(?:role|position|job|opening)\b/.exec(message)?.[1] ??
      /\bas\s+(?:an?\s+)?((?:[A-Z][\w+#./-]*\s*)+)/.exec(message)?.[1]?.trim()
  const url = /https?:\/\/[^\s,]+/.exec(message)?.[0]
  const source = /\b(?:via|through|on|from)\s+(?:an?\s+|the\s+)?((?!https?:)[a-z][\w -]*?)(?=[,.;]|\s+https?:|$)/i.exec(
    message
  )?.[1]?.trim()
  const lower = message.toLowerCase()
  const status = lower.includes("interview")
    ? "Interview Scheduled"
    : lower.includes("offer")
    ? "Offer"
    : lower.includes("reject")
    ? "Rejected"
    : lower.includes("withdr")
    ? "Withdrawn"
    : "Applied"
  return {
    company: company ?? "Unknown company",
    role: role ?? "Unknown role",
    status,
    ...(url === undefined ? {} : { url }),
    ...(source === undefined ? {} : { source })
  }
}

const parseApplication = (text: string): Record<string, unknown> => {
  try {
    const value = JSON.parse(text)
    return typeof value === "object" && value !== null ? value : {}
  } catch {
    return extractApplication(text)
  }
}

const trackerTurn = (request: TestModel.Request): TestModel.Reply => {
  if (!Offline.called(request, "save_application")) {
    const app = parseApplication(request.lastUserMessage ?? "")
    const params: Record<string, unknown> = {}
    for (const key of ["company", "role", "status", "url", "source", "notes"]) {
      if (typeof app[key] === "string" && app[key] !== "") params[key] = app[key]
    }
    return TestModel.toolCalls(["save_application", params])
  }
  if (!Offline.called(request, "list_applications")) return TestModel.toolCalls(["list_applications", {}])
  const calls = Offline.pastCalls(request)
  const saved = calls.find((c) => c.name === "save_application")?.result
  const list = calls.find((c) => c.name === "list_applications")?.result
  return TestModel.text(`${String(saved)}\n\nYour tracker now:\n${String(list)}`)
}

export const offlineModel = TestModel.layer((request) =>
  request.structured
    ? TestModel.object(extractApplication(request.lastUserMessage ?? ""))
    : trackerTurn(request)
)
