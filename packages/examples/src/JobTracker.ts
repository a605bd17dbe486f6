/**
 * Scenario 2 — a job application tracker (agno's `job_application_tracker`):
 * one agent extracts a structured `JobApplication` from the message, the next
 * saves it with a tool into the session state and lists the tracker. The
 * workflow has a fixed session id, so applications accumulate across runs and
 * processes. The tools are in `JobTracker.tools.ts`, the scripted replies in
 * `JobTracker.offline.ts`.
 *
 * @since 0.1.0
 */
import { Agent, Step, Workflow } from "@sessionflow/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { offlineModel } from "./JobTracker.offline.js"
import { Applications, TrackerTools, TrackerToolsLive, VALID_STATUSES } from "./JobTracker.tools.js"
import * as Output from "./Output.js"
import * as Scenario from "./Scenario.js"

export { extractApplication, offlineModel } from "./JobTracker.offline.js"
export * from "./JobTracker.tools.js"

export const SESSION_ID = "job_tracker_demo"
export const DEFAULT_DB = "tmp/job_application_tracker.db"

// -- the extraction step's structured output ------------------------------------

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

// -- agents ------------------------------------------------------------------

export const extractor = Agent.make({
  name: "Application Extractor",
  instructions: `Extract a single job application from the user's message.
Infer the company, role, URL and source when they are present.
Set status to one of: ${VALID_STATUSES.join(", ")}. Default to 'Applied'.`,
  outputSchema: JobApplication
})

export const tracker = Agent.make({
  name: "Application Tracker",
  instructions: `You receive a structured job application.
Call save_application exactly once with its fields.
Then call list_applications and show the full tracker to the user.`,
  tools: TrackerTools
})

// -- workflow: message → JobApplication → the tracker's reply ------------------

export const trackerWorkflow = Workflow.make({
  name: "Job Application Tracker",
  state: Applications,
  sessionState: { applications: [] },
  sessionId: SESSION_ID
}).pipe(
  Workflow.andThen(
    Step.agent("extract_application", extractor, {
      description: "Extract a structured job application from the message"
    })
  ),
  Workflow.andThen(
    Step.agent("save_application", tracker, {
      description: "Save the application to the tracker and list all applications"
    })
  )
)

// -- main: three messages on the fixed session ----------------------------------

export const inputs = [
  "Applied to a Backend Engineer role at Acme Robotics via a job board, https://acme.example/careers/123",
  "Got an interview scheduled for a Python Developer position at Globex, found via a referral",
  "Submitted an application for a Data Scientist role at Initech"
] as const

const titles = ["Track a Backend Engineer role", "Track a Python Developer role", "Track a Data Scientist role"]

export const scenario = Scenario.make({
  name: "job-tracker",
  cookbook: "job_application_tracker",
  aliases: ["jobs", "job", "job-application-tracker", "tracker"],
  description: "Structured output + tools; a fixed session accumulates applications across processes",
  workflows: [trackerWorkflow],
  offlineModel,
  layer: TrackerToolsLive,
  db: DEFAULT_DB
}, ({ db, dbOption }) =>
  Effect.gen(function*() {
    const existing = yield* Effect.option(Workflow.getSessionState(trackerWorkflow))
    yield* Option.match(existing, {
      onNone: () => Output.note(`Session ${SESSION_ID} is new in ${db}.`),
      onSome: ({ applications: { length: n } }) =>
        Output.note(
          `Session ${SESSION_ID} in ${db} already tracks ${n} application${
            n === 1 ? "" : "s"
          } from earlier runs; new ones are appended.`
        )
    })
    for (const [i, input] of inputs.entries()) {
      yield* Output.heading(`Example ${i + 1}: ${titles[i]}`)
      yield* Workflow.stream(trackerWorkflow, input).pipe(Output.print)
      const state = yield* Workflow.getSessionState(trackerWorkflow)
      yield* Output.state(i === inputs.length - 1 ? "Final workflow session state" : "Workflow session state", state)
    }
    yield* Output.say()
    yield* Output.note(`Run it again (or in another process): the applications keep accumulating in ${SESSION_ID}.`)
    yield* Output.note(`  npm start -- sessions show ${dbOption} ${SESSION_ID}`)
  }))

export const main = scenario.main
