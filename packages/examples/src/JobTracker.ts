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
import { Agent, SessionState, Step, TestModel, Workflow } from "@sessionflow/core"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Offline from "./Offline.js"
import * as Output from "./Output.js"
import * as Scenario from "./Scenario.js"

/**
 * @since 0.1.0
 * @category constants
 */
export const VALID_STATUSES = ["Applied", "Interview Scheduled", "Rejected", "Offer", "Withdrawn"] as const

/**
 * The fixed session of the tracker.
 *
 * @since 0.1.0
 * @category constants
 */
export const SESSION_ID = "job_tracker_demo"

/**
 * @since 0.1.0
 * @category models
 */
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

/**
 * @since 0.1.0
 * @category models
 */
export type Application = typeof Application.Type

/**
 * @since 0.1.0
 * @category state
 */
export class Applications extends SessionState.Tag("@sessionflow/examples/Applications")<Applications>()({
  applications: Schema.Array(Application)
}) {}

/**
 * The structured output of the extraction step.
 *
 * @since 0.1.0
 * @category models
 */
export const JobApplication = Schema.Struct({
  company: Schema.String.annotations({ description: "Company name" }),
  role: Schema.String.annotations({ description: "Job title / role" }),
  url: Schema.optional(Schema.String).annotations({ description: "Job posting URL" }),
  source: Schema.optional(Schema.String).annotations({
    description: "Where the job was found, e.g. a job board"
  }),
  status: Schema.optionalWith(Schema.String, { default: () => "Applied" }).annotations({
    description: `Application status, one of: ${VALID_STATUSES.join(", ")}`
  }),
  notes: Schema.optional(Schema.String).annotations({ description: "Any extra notes" })
}).annotations({ identifier: "JobApplication", description: "A single job application" })

/**
 * @since 0.1.0
 * @category models
 */
export type JobApplication = typeof JobApplication.Type

/**
 * @since 0.1.0
 * @category tools
 */
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

/**
 * @since 0.1.0
 * @category tools
 */
export const ListApplications = Tool.make("list_applications", {
  description: "List every tracked job application.",
  success: Schema.String,
  dependencies: [Applications]
})

/**
 * @since 0.1.0
 * @category tools
 */
export const TrackerTools = Toolkit.make(SaveApplication, ListApplications)

const today = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString().slice(0, 10))

/**
 * @since 0.1.0
 * @category tools
 */
export const TrackerToolsLive = TrackerTools.toLayer({
  save_application: ({ company, notes = "", role, source = "", status = "Applied", url = "" }) =>
    Effect.flatMap(today, (applied_at) =>
      Applications.modify((s) => {
        const record = { id: s.applications.length + 1, company, role, status, url, source, notes, applied_at }
        return [
          `Saved application #${record.id}: ${role} at ${company} (${status}).`,
          { ...s, applications: [...s.applications, record] }
        ]
      })),
  list_applications: () =>
    Applications.modify((s) => [
      s.applications.length === 0
        ? "No applications tracked yet."
        : s.applications.map((a) => `#${a.id} ${a.role} at ${a.company} - ${a.status}`).join("\n"),
      s
    ])
})

// -----------------------------------------------------------------------------
// agents and workflow
// -----------------------------------------------------------------------------

/**
 * @since 0.1.0
 * @category agents
 */
export const extractor = Agent.make({
  name: "Application Extractor",
  instructions: [
    "Extract a single job application from the user's message.",
    "Infer the company, role, URL and source when they are present.",
    `Set status to one of: ${VALID_STATUSES.join(", ")}. Default to 'Applied'.`
  ],
  outputSchema: JobApplication
})

/**
 * @since 0.1.0
 * @category agents
 */
export const tracker = Agent.make({
  name: "Application Tracker",
  instructions: [
    "You receive a structured job application.",
    "Call save_application exactly once with its fields.",
    "Then call list_applications and show the full tracker to the user."
  ],
  tools: TrackerTools
})

/**
 * The tracker: extraction (structured output) then saving (tools), on the
 * fixed session `job_tracker_demo`.
 *
 * @since 0.1.0
 * @category workflows
 */
export const trackerWorkflow = Workflow.make({
  name: "Job Application Tracker",
  state: Applications,
  sessionState: { applications: [] },
  sessionId: SESSION_ID,
  steps: [
    Step.agent("extract_application", extractor, { description: "Extract a structured job application from the message" }),
    Step.agent("save_application", tracker, { description: "Save the application to the tracker and list all applications" })
  ]
})

/**
 * The three messages.
 *
 * @since 0.1.0
 * @category inputs
 */
export const inputs = [
  "Applied to a Backend Engineer role at Acme Robotics via a job board, https://acme.example/careers/123",
  "Got an interview scheduled for a Python Developer position at Globex, found via a referral",
  "Submitted an application for a Data Scientist role at Initech"
] as const

// -----------------------------------------------------------------------------
// the offline model
// -----------------------------------------------------------------------------

/**
 * A heuristic extraction of an application from a message, as the scripted
 * extractor replies it.
 *
 * @since 0.1.0
 * @category offline
 */
export const extractApplication = (message: string): JobApplication => {
  const company = /\b(?:at|with|for)\s+([A-Z][\w&.'-]*(?:\s+[A-Z][\w&.'-]*)*)/.exec(message)?.[1]?.replace(/[.,]$/, "")
  const role = /\b(?:an?|the)\s+((?:[A-Z][\w+#./-]*\s+)*[A-Z][\w+#./-]*)\s+(?:role|position|job|opening)\b/.exec(message)?.[1] ??
    /\bas\s+(?:an?\s+)?((?:[A-Z][\w+#./-]*\s*)+)/.exec(message)?.[1]?.trim()
  const url = /https?:\/\/[^\s,]+/.exec(message)?.[0]
  const source = /\b(?:via|through|on|from)\s+(?:an?\s+|the\s+)?((?!https?:)[a-z][\w -]*?)(?=[,.;]|\s+https?:|$)/i.exec(message)?.[1]?.trim()
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

/**
 * The scripted model: the extractor answers with {@link extractApplication}
 * of the message; the tracker saves it once, lists, and reports.
 *
 * @since 0.1.0
 * @category offline
 */
export const offlineModel = TestModel.layer((request) =>
  request.structured
    ? TestModel.object(extractApplication(request.lastUserMessage ?? ""))
    : trackerTurn(request)
)

// -----------------------------------------------------------------------------
// main
// -----------------------------------------------------------------------------

const titles = ["Track a Backend Engineer role", "Track a Python Developer role", "Track a Data Scientist role"]

/**
 * Shows what the tracker already holds, then tracks the three applications on
 * the fixed session, printing the state after each run.
 *
 * @since 0.1.0
 * @category main
 */
export const main = (options: Scenario.Options = {}): Effect.Effect<void, unknown> =>
  Effect.gen(function*() {
    const db = options.db ?? DEFAULT_DB
    const model = yield* Scenario.chooseModel(offlineModel, options)
    yield* Effect.gen(function*() {
      const existing = yield* Effect.option(Workflow.getSessionState(trackerWorkflow, SESSION_ID))
      yield* Option.match(existing, {
        onNone: () => Output.note(`Session ${SESSION_ID} is new in ${db}.`),
        onSome: (s) =>
          Output.note(
            `Session ${SESSION_ID} in ${db} already tracks ${s.applications.length} application${
              s.applications.length === 1 ? "" : "s"
            } from earlier runs; new ones are appended.`
          )
      })
      for (const [i, input] of inputs.entries()) {
        yield* Output.heading(`Example ${i + 1}: ${titles[i]}`)
        yield* Scenario.runShown(trackerWorkflow, input)
        const state = yield* Workflow.getSessionState(trackerWorkflow, SESSION_ID)
        yield* Output.state(i === inputs.length - 1 ? "Final workflow session state" : "Workflow session state", state)
      }
    }).pipe(Effect.provide(Layer.mergeAll(model, TrackerToolsLive, Scenario.storeLayer(options, db))))
    yield* Output.say()
    yield* Output.note(`Run it again (or in another process): the applications keep accumulating in ${SESSION_ID}.`)
    yield* Output.note(`  npm start -- sessions show --db ${db} ${SESSION_ID}`)
  }).pipe(Output.withConsole)

/**
 * The tracker's SQLite file.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_DB = "tmp/job_application_tracker.db"

/**
 * @since 0.1.0
 * @category scenario
 */
export const scenario: Scenario.Scenario = {
  name: "job-tracker",
  aliases: ["jobs", "job", "job-application-tracker", "tracker"],
  cookbook: "job_application_tracker",
  description: "Structured output + tools; a fixed session accumulates applications across processes",
  main
}
