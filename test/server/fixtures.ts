/**
 * Workflows the server tests serve.
 */
import {
  Agent,
  SessionState,
  SessionStore,
  Step,
  type StepInput,
  TestModel,
  Workflow,
  WorkflowError
} from "@sessionflow/core"
import { Data, Deferred, Effect, Layer, Schema } from "effect"

class Notes extends SessionState.Tag("test/server/Notes")<Notes>()({ notes: Schema.Array(Schema.String) }) {}

/** Appends its (string) input to the notes; its content is the new count. */
export const notes = Workflow.make({
  name: "notes",
  description: "Keeps notes",
  input: Schema.String,
  state: Notes,
  sessionState: { notes: [] }
}).pipe(
  Workflow.andThen("add", ({ input }) => Notes.modify((s) => [s.notes.length + 1, { notes: [...s.notes, input] }]))
)

class Boom extends Data.TaggedError("Boom")<{ readonly message: string }> {}

/** Its step fails with a typed error. */
export const failing = Workflow.make({
  name: "failing",
  steps: [Step.make("explode", () => Effect.fail(new Boom({ message: "the tool broke" })))]
})

/** Its step dies (a bug), with internals in the defect. */
export const dying = Workflow.make({
  name: "dying",
  steps: [Step.make("die", () => Effect.die(new Error("secret internals at /srv/app.ts:12")))]
})

/** A name with spaces, as the examples have. */
export const spaced = Workflow.make({
  name: "Spaced Name Workflow",
  steps: [Step.make("echo", ({ input }) => Effect.succeed(input))]
})

/**
 * Appends its input to the notes; an input starting with "wait" then tells
 * `started` and waits for `gate` before completing.
 */
export const gated = (started: Deferred.Deferred<void>, gate: Deferred.Deferred<void>) =>
  Workflow.make({ name: "gated", input: Schema.String, state: Notes, sessionState: { notes: [] } }).pipe(
    Workflow.andThen("add", ({ input }) => Notes.update((s) => ({ notes: [...s.notes, input] }))),
    Workflow.andThen("wait", ({ input }) =>
      input.startsWith("wait")
        ? Effect.zipRight(Deferred.succeed(started, undefined), Deferred.await(gate))
        : Effect.void)
  )

/** A memory store whose commits of a state always find a newer version. */
export const conflictingStore: Layer.Layer<SessionStore.SessionStore> = Layer.sync(SessionStore.SessionStore, () => {
  const backend = SessionStore.makeMemoryBackend()
  return SessionStore.make({
    ...backend,
    commit: (commit) =>
      commit.state !== undefined && commit.expectedVersion > 0
        ? Effect.fail(
          new WorkflowError.SessionConflict({
            sessionId: commit.sessionId,
            expectedVersion: commit.expectedVersion,
            actualVersion: commit.expectedVersion + 1
          })
        )
        : backend.commit(commit)
  })
})

/**
 * Asks whether to add its input to the notes (payload `{ note }`, response
 * `{ approved }`): approved, the note is added; the content says what happened.
 */
export const approvals = Workflow.make({
  name: "approvals",
  input: Schema.String,
  state: Notes,
  sessionState: { notes: [] }
}).pipe(
  Workflow.andThen(Step.pause("approve", {
    payload: Schema.Struct({ note: Schema.String }),
    response: Schema.Struct({ approved: Schema.Boolean }),
    ask: (input: StepInput.StepInput<unknown, string>) => Effect.succeed({ note: input.input }),
    resume: ({ approved }, input: StepInput.StepInput<unknown, string>) =>
      approved
        ? Effect.as(Notes.update((s) => ({ notes: [...s.notes, input.input] })), `added ${input.input}`)
        : Effect.succeed("rejected")
  }))
)

/** Waits for the signal "paid", then for "shipped", and notes both. */
export const payments = Workflow.make({
  name: "payments",
  input: Schema.String,
  state: Notes,
  sessionState: { notes: [] }
}).pipe(
  Workflow.andThen(Step.waitFor("paid", Schema.Struct({ amount: Schema.Number }))),
  Workflow.andThen(Step.waitFor("shipped", Schema.String)),
  Workflow.andThen(
    "note",
    ({ input, previousStepContent: shipped }) =>
      Effect.as(
        Notes.update((s) => ({ notes: [...s.notes, `${input}: shipped ${shipped}`] })),
        `${input} shipped ${shipped}`
      )
  )
)

/** An agent step whose own (scripted) model reports the tokens of its reply. */
export const summarising = Workflow.make({ name: "summarising", input: Schema.String }).pipe(
  Workflow.andThen(Step.agent(
    "summarise",
    Agent.make({
      name: "summariser",
      instructions: "Summarise.",
      model: TestModel.layer([TestModel.withUsage(TestModel.text("A summary."), { inputTokens: 40, outputTokens: 8 })])
    })
  ))
)
