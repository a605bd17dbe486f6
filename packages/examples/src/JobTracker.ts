/**
 * Scenario 2 — a job application tracker (agno's `job_application_tracker`):
 * one agent extracts a structured `JobApplication` from the message, the next
 * saves it with a tool into the session state and lists the tracker. The
 * workflow has a fixed session id, so applications accumulate across runs and
 * processes.
 *
 * @since 0.1.0
 */
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import { Agent, SessionState, Step, Workflow } from "@sessionflow/core"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { offlineModel } from "./JobTracker.offline.js"
import * as Output from "./Output.js"
import * as Scenario from "./Scenario.js"

export { extractApplication, offlineModel } from "./JobTracker.offline.js"

export const SESSION_ID = "job_tracker_demo"
export const DEFAULT_DB = "tmp/job_application_tracker.db"
export const VALID_STATUSES = ["Applied", "Interview Scheduled", "Rejected", "Offer", "Withdrawn"] as const

// -- state -------------------------------------------------------------------

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

// the extraction step's structured output
export const JobApplication = Schema.Struct({
  company: Schema.String.annotations({ description: "Company name" }),
  role: Schema.String.annotations({ description: "Job title / role" }),
  url: Schema.optional(Schema.String).annotations({ description: "Job posting URL" }),
  source: Schema.optional(Schema.String).annotations({ description: "Where the job was found, e.g. a job board" }),
  status: Schema.optionalWith(Schema.String, { default: () => "Applied" }).annotations({
    description: `Application status, one of: ${VALID_STATUSES.join(", ")}`
  }),
  notes: Schema.optional(Schema.String).annotations({ description: "Any extra notes" })
}).annotations({ identifier: "JobApplication", description: "A single job application" })
export type JobApplication = typeof JobApplication.Type

// -- tools -------------------------------------------------------------------

export const SaveApplication = Tool.make("save_application", {
  description: "Save one job application to the tracker.",
  parameters: {
    company: Schema.String,
    role: Schema.String,
    status: Schema.optional(Schema.String.annotations({ description: `One of: ${VALID_STATUSES.join(", ")} (default Applied)` })),
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
        return [`Saved application #${saved.id}: ${role} at ${company} (${status}).`, { applications: [...s.applications, saved] }]
      })),
  list_applications: () =>
    Effect.map(Applications.get, (s) =>
      s.applications.length === 0
        ? "No applications tracked yet."
        : s.applications.map((a) => `#${a.id} ${a.role} at ${a.company} - ${a.status}`).join("\n"))
})

// -- agents ------------------------------------------------------------------

export const extractor = Agent.make({
  name: "Application Extractor",
  instructions: [
    "Extract a single job application from the user's message.",
    "Infer the company, role, URL and source when they are present.",
    `Set status to one of: ${VALID_STATUSES.join(", ")}. Default to 'Applied'.`
  ],
  outputSchema: JobApplication
})

export const tracker = Agent.make({
  name: "Application Tracker",
  instructions: [
    "You receive a structured job application.",
    "Call save_application exactly once with its fields.",
    "Then call list_applications and show the full tracker to the user."
  ],
  tools: TrackerTools
})

// -- workflow: message → JobApplication → the tracker's reply ------------------

export const trackerWorkflow = Workflow.make({
  name: "Job Application Tracker",
  state: Applications,
  sessionState: { applications: [] },
  sessionId: SESSION_ID
}).pipe(
  Workflow.andThen(Step.agent("extract_application", extractor, { description: "Extract a structured job application from the message" })),
  Workflow.andThen(Step.agent("save_application", tracker, { description: "Save the application to the tracker and list all applications" }))
)

// -- main: three messages on the fixed session ----------------------------------

export const inputs = [
  "Applied to a Backend Engineer role at Acme Robotics via a job board, https://acme.example/careers/123",
  "Got an interview scheduled for a Python Developer position at Globex, found via a referral",
  "Submitted an application for a Data Scientist role at Initech"
] as const

const titles = ["Track a Backend Engineer role", "Track a Python Developer role", "Track a Data Scientist role"]

export const scenario = Scenario.make({
  name: "job-tracker", cookbook: "job_application_tracker", aliases: ["jobs", "job", "job-application-tracker", "tracker"],
  description: "Structured output + tools; a fixed session accumulates applications across processes",
  workflows: [trackerWorkflow], offlineModel, layer: TrackerToolsLive, db: DEFAULT_DB
}, ({ db, dbOption }) =>
  Effect.gen(function*() {
    const existing = yield* Effect.option(Workflow.getSessionState(trackerWorkflow))
    yield* Option.match(existing, {
      onNone: () => Output.note(`Session ${SESSION_ID} is new in ${db}.`),
      onSome: ({ applications: { length: n } }) =>
        Output.note(`Session ${SESSION_ID} in ${db} already tracks ${n} application${n === 1 ? "" : "s"} from earlier runs; new ones are appended.`)
    })
    for (const [i, input] of inputs.entries()) {
      const state = yield* Scenario.showRun(trackerWorkflow, input, { heading: `Example ${i + 1}: ${titles[i]}` })
      yield* Output.state(i === inputs.length - 1 ? "Final workflow session state" : "Workflow session state", state)
    }
    yield* Output.say()
    yield* Output.note(`Run it again (or in another process): the applications keep accumulating in ${SESSION_ID}.`)
    yield* Output.note(`  npm start -- sessions show ${dbOption} ${SESSION_ID}`)
  }))

export const main = scenario.main
