/**
 * The job tracker's state and tools (scenario 2): `save_application`, which
 * appends an application (dated today), and `list_applications`.
 *
 * @since 0.1.0
 */
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import { SessionState } from "@sessionflow/core"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

export const VALID_STATUSES = ["Applied", "Interview Scheduled", "Rejected", "Offer", "Withdrawn"] as const

export const Application = Schema.Struct({
  id: Schema.Number,
  company: Schema.String,
  role: Schema.String,
  status: Schema.String,
  url: Schema.String,
  source: Schema.String,
  notes: Schema.String,
  applied_at: Schema.String
})
export type Application = typeof Application.Type

export class Applications extends SessionState.Tag("@sessionflow/examples/Applications")<Applications>()({
  applications: Schema.Array(Application)
}) {}

export const SaveApplication = Tool.make("save_application", {
  description: "Save one job application to the tracker.",
  parameters: {
    company: Schema.String,
    role: Schema.String,
    status: Schema.optional(
      Schema.String.annotations({ description: `One of: ${VALID_STATUSES.join(", ")} (default Applied)` })
    ),
    url: Schema.optional(Schema.String),
    source: Schema.optional(Schema.String),
    notes: Schema.optional(Schema.String)
  },
  success: Schema.String,
  dependencies: [Applications]
})
export const ListApplications = Tool.make("list_applications", {
  description: "List every tracked job application.",
  success: Schema.String,
  dependencies: [Applications]
})
export const TrackerTools = Toolkit.make(SaveApplication, ListApplications)

const today = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString().slice(0, 10))

export const TrackerToolsLive = TrackerTools.toLayer({
  save_application: ({ company, notes = "", role, source = "", status = "Applied", url = "" }) =>
    Effect.flatMap(today, (applied_at) =>
      Applications.modify((s) => {
        const saved = { id: s.applications.length + 1, company, role, status, url, source, notes, applied_at }
        return [`Saved application #${saved.id}: ${role} at ${company} (${status}).`, {
          applications: [...s.applications, saved]
        }]
      })),
  list_applications: () =>
    Effect.map(Applications.get, (s) =>
      s.applications.length === 0
        ? "No applications tracked yet."
        : s.applications.map((a) => `#${a.id} ${a.role} at ${a.company} - ${a.status}`).join("\n"))
})
