/**
 * Every engine error a run, a continuation or a cancellation can end with
 * gets its own API error (and so its status code); the table is keyed by the
 * error tags, so a new engine error fails to compile here until it is mapped.
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { describe, expect, it } from "@effect/vitest"
import { type Workflow, WorkflowError } from "@sessionflow/core"
import { WorkflowApi } from "@sessionflow/server"
import * as errors from "../../packages/server/src/internal/errors.js"

type Tag = Exclude<
  Workflow.ContinueError | WorkflowError.SessionNotFound | WorkflowError.SessionIdRequired,
  WorkflowError.RunPaused
>["_tag"]

const cases: { readonly [K in Tag]: readonly [error: WorkflowError.WorkflowError, answer: object, status: number] } = {
  SessionNotFound: [new WorkflowError.SessionNotFound({ sessionId: "s" }), {
    _tag: "NotFound",
    what: "session",
    id: "s"
  }, 404],
  SessionOwnershipError: [
    new WorkflowError.SessionOwnershipError({ sessionId: "s", userId: "bob", ownerId: "alice" }),
    { _tag: "NotFound", what: "session", id: "s", message: "Session 's' does not exist" },
    404
  ],
  SessionConflict: [
    new WorkflowError.SessionConflict({ sessionId: "s", expectedVersion: 1, actualVersion: 2 }),
    { _tag: "Conflict", reason: "session-changed", sessionId: "s" },
    409
  ],
  StateDecodeError: [
    new WorkflowError.StateDecodeError({ sessionId: "s", reason: "corrupt", description: "not JSON" }),
    { _tag: "InternalError" },
    500
  ],
  SessionStoreError: [new WorkflowError.SessionStoreError({ method: "load", description: "disk" }), {
    _tag: "InternalError"
  }, 500],
  InputDecodeError: [
    new WorkflowError.InputDecodeError({ workflowName: "w", description: "Expected string" }),
    { _tag: "BadRequest", reason: "input" },
    400
  ],
  NotSerializable: [
    new WorkflowError.NotSerializable({ sessionId: "s", what: "input", path: "$.f", description: "a function" }),
    { _tag: "BadRequest", reason: "input" },
    400
  ],
  InvalidSessionId: [new WorkflowError.InvalidSessionId({ sessionId: "", reason: "empty" }), {
    _tag: "BadRequest",
    reason: "session-id"
  }, 400],
  SessionIdRequired: [
    new WorkflowError.SessionIdRequired({ workflowName: "w", method: "getSessionState" }),
    { _tag: "BadRequest", reason: "session-id" },
    400
  ],
  SessionPaused: [
    new WorkflowError.SessionPaused({ sessionId: "s", runId: "r" }),
    { _tag: "Conflict", reason: "session-paused", sessionId: "s", runId: "r" },
    409
  ],
  SessionBusy: [
    new WorkflowError.SessionBusy({ sessionId: "s", runId: "r", leaseExpiresAt: 0 }),
    { _tag: "Conflict", reason: "session-busy", sessionId: "s", runId: "r" },
    409
  ],
  RunInProgress: [
    new WorkflowError.RunInProgress({ runId: "r", sessionId: "s", owner: "o", leaseExpiresAt: 0 }),
    { _tag: "Conflict", reason: "run-in-progress", sessionId: "s", runId: "r" },
    409
  ],
  RunLost: [new WorkflowError.RunLost({ runId: "r", description: "cancelled" }), {
    _tag: "Conflict",
    reason: "run-lost",
    runId: "r"
  }, 409],
  RunNotFound: [new WorkflowError.RunNotFound({ runId: "r", description: "gone" }), {
    _tag: "NotFound",
    what: "run",
    id: "r"
  }, 404],
  PauseMismatch: [
    new WorkflowError.PauseMismatch({ runId: "r", expected: "0:approve", current: "1:approve" }),
    { _tag: "Conflict", reason: "pause-mismatch", runId: "r", expected: "0:approve", current: "1:approve" },
    409
  ],
  RunUnfinished: [
    new WorkflowError.RunUnfinished({ runId: "r", sessionId: "s", description: "the commit failed" }),
    { _tag: "Conflict", reason: "run-unfinished", runId: "r", sessionId: "s" },
    409
  ],
  WorkflowChanged: [
    new WorkflowError.WorkflowChanged({
      runId: "r",
      workflowName: "w",
      recorded: "(v1)",
      current: "(v2)",
      difference: "step 1"
    }),
    { _tag: "Conflict", reason: "workflow-changed", runId: "r" },
    409
  ],
  RunEnded: [
    new WorkflowError.RunEnded({ runId: "r", sessionId: "s", status: "cancelled" }),
    { _tag: "Conflict", reason: "run-ended", runId: "r", sessionId: "s" },
    409
  ],
  InvalidRunId: [new WorkflowError.InvalidRunId({ runId: "", reason: "empty" }), {
    _tag: "BadRequest",
    reason: "run-id"
  }, 400],
  ResponseDecodeError: [
    new WorkflowError.ResponseDecodeError({ runId: "r", description: "Expected boolean" }),
    { _tag: "BadRequest", reason: "response" },
    400
  ],
  PlacementError: [
    new WorkflowError.PlacementError({
      reason: "delivery",
      workflowName: "w",
      sessionId: "s",
      description: "mailbox full"
    }),
    { _tag: "InternalError" },
    500
  ]
}

const statusOf: Record<string, number> = {
  BadRequest: 400,
  NotFound: 404,
  Conflict: 409,
  InternalError: 500,
  RunFailed: 500
}

describe("engine errors over HTTP", () => {
  it("every engine error of a run, a continuation or a cancellation has its API error and status", () => {
    for (const [tag, [error, answer, status]] of Object.entries(cases)) {
      const mapped = errors.runError(false)(error)
      expect(error._tag).toBe(tag)
      expect(mapped, tag).toMatchObject(answer)
      expect(statusOf[mapped._tag], tag).toBe(status)
      expect(mapped.message, tag).not.toContain("alice")
      expect(mapped.message, tag).not.toMatch(/\n\s+at /)
    }
  })

  it("a run in progress is a 409 that does not name the host and process running it", () => {
    const owner = "build-host.internal+4026531836:4242:0f0e"
    const mapped = errors.runError(false)(
      new WorkflowError.RunInProgress({ runId: "r", sessionId: "s", owner, leaseExpiresAt: 0 })
    )
    expect(mapped).toMatchObject({ _tag: "Conflict", reason: "run-in-progress", sessionId: "s", runId: "r" })
    expect(mapped.message).toContain("1970-01-01T00:00:00.000Z")
    expect(mapped.message).not.toContain("build-host")
    expect(mapped.message).not.toContain("4242")
  })

  it("the API's error classes carry those status codes", () => {
    const classes = {
      BadRequest: WorkflowApi.BadRequest,
      NotFound: WorkflowApi.NotFound,
      Conflict: WorkflowApi.Conflict,
      InternalError: WorkflowApi.InternalError,
      RunFailed: WorkflowApi.RunFailed
    }
    for (const [tag, schema] of Object.entries(classes)) {
      expect(HttpApiSchema.getStatusError(schema), tag).toBe(statusOf[tag])
    }
  })

  it(
    "a step's own error is a RunFailed with its message; a state the request carried that does not fit is the caller's",
    () => {
      expect(errors.runError(false)(new Error("boom"))).toBeInstanceOf(WorkflowApi.RunFailed)
      // a step's own error brought back from the cluster runner that ran it reads as it would in one process
      const remote = new WorkflowError.PlacementError({
        reason: "remote",
        workflowName: "w",
        sessionId: "s",
        description: "Refused: no"
      })
      expect(errors.runError(false)(remote)).toMatchObject({ _tag: "RunFailed", message: "Refused: no" })
      const state = new WorkflowError.StateDecodeError({
        sessionId: "s",
        reason: "schema",
        description: "Expected string"
      })
      expect(errors.runError(true)(state)).toMatchObject({ _tag: "BadRequest", reason: "state" })
      expect(errors.runError(false)(state)).toMatchObject({ _tag: "InternalError" })
    }
  )
})
