import { describe, expect, it } from "@effect/vitest"
import { WorkflowError } from "@sessionflow/core"
import { Boom } from "./utils.js"

describe("WorkflowError", () => {
  it("errors are WorkflowErrors with readable messages", () => {
    const e = new WorkflowError.SessionConflict({ sessionId: "s", expectedVersion: 1, actualVersion: 2 })
    expect(WorkflowError.isWorkflowError(e)).toBe(true)
    expect(WorkflowError.isWorkflowError(new Boom({ reason: "x" }))).toBe(false)
    expect(e.message).toBe("Session 's' was changed concurrently (expected version 1, found 2); nothing was written")
  })
})
