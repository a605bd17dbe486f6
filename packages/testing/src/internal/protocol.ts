/**
 * What a crash-test worker and the test that starts it say to each other:
 * the worker's job (one process of a crash test), the lines it appends to
 * the test's log (one JSON object a line: each durable boundary its run
 * reached, each pause it answered), and the result it writes when its run
 * ended.
 *
 * @internal
 */

/** One process of a crash test. @internal */
export interface Job {
  /** the user's module, a file URL */
  readonly module: string
  /** its exports: the workflow, and the layer its steps need (none: only the store) */
  readonly workflow: string
  readonly layer: string | undefined
  readonly input: unknown
  /** the answers to the run's pauses, in the order it asks them */
  readonly responses: ReadonlyArray<unknown>
  readonly sessionId: string
  readonly runId: string
  /** the SQLite file of the store */
  readonly database: string
  /** the log every process of the test appends to */
  readonly log: string
  /** where the worker writes its {@link Result} */
  readonly result: string
  /** the process kills itself (SIGKILL) at its `crashAt`-th boundary (from 1); none: it runs to the end */
  readonly crashAt: number | undefined
  /** which process of the test this is (from 0), written on each log line */
  readonly attempt: number
}

/**
 * A durable boundary as the log keeps it: a step's (`index` of the top-level
 * step), a tool call's (its arguments as JSON), a model call's (a hash of its
 * request), the commit's.
 *
 * @internal
 */
export type Boundary =
  | { readonly _tag: "BeforeStep"; readonly step: string; readonly index: number }
  | { readonly _tag: "AfterStep"; readonly step: string; readonly index: number }
  | { readonly _tag: "AfterTool"; readonly tool: string; readonly params: string; readonly idempotent: boolean }
  | { readonly _tag: "AfterModelCall"; readonly agent: string; readonly request: string }
  | { readonly _tag: "AfterCommit" }

/** A line of the log. @internal */
export type Line =
  | { readonly _tag: "Boundary"; readonly attempt: number; readonly seq: number; readonly boundary: Boundary }
  | { readonly _tag: "Answered"; readonly attempt: number; readonly key: string }
  | { readonly _tag: "Paused"; readonly attempt: number; readonly key: string }

/** How the worker's run ended. @internal */
export type Result =
  | { readonly _tag: "Completed"; readonly workflow: string; readonly content: unknown; readonly state: unknown }
  | { readonly _tag: "Failed"; readonly error: string }

/** The environment variable that carries the worker's {@link Job} (JSON). @internal */
export const jobVariable = "SESSIONFLOW_CRASH_TEST_JOB"
