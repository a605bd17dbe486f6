/**
 * The runner side (the session entity's handlers) and the client side (a
 * `Placement` sending each operation to the session's entity).
 *
 * @internal
 */
import * as Entity from "@effect/cluster/Entity"
import * as Sharding from "@effect/cluster/Sharding"
import { Placement, SessionStore, Workflow, WorkflowError, type WorkflowEvent } from "@sessionflow/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { randomUUID } from "node:crypto"
import * as protocol from "./protocol.js"
import * as recovery from "./recovery.js"

/** @internal */
export interface RunnerOptions<W extends Workflow.Any> {
  readonly workflows: ReadonlyArray<W>
  readonly failoverWait?: Duration.DurationInput | undefined
  readonly maxIdleTime?: Duration.DurationInput | undefined
  readonly recovery?: boolean | Omit<recovery.Options, "workflows"> | undefined
}

/** @internal */
const defaultFailoverWait: Duration.Duration = Duration.minutes(1)

/** A failure of a run as it crosses back: our own errors as they are, any other (a step's own) as `PlacementError`. */
const toWire = (workflowName: string, sessionId: string) => (error: unknown): WorkflowError.WorkflowError =>
  WorkflowError.isWorkflowError(error)
    ? error
    : new WorkflowError.PlacementError({
      reason: "remote",
      workflowName,
      sessionId,
      description: WorkflowError.format(error)
    })

/**
 * A run redelivered after its runner died finds it still holding its lease
 * (`RunInProgress`) until the lease expires (unless that runner was a
 * process of this host, gone: then at once); then the same call resumes it
 * from its journal. So it is tried again while that lasts, up to `wait`.
 */
const waitForLease = (wait: Duration.Duration) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.retry(self, {
    while: (error) => WorkflowError.isWorkflowError(error) && error._tag === "RunInProgress",
    schedule: Schedule.spaced(Duration.millis(100)).pipe(Schedule.upTo(wait))
  })

/** The runs of a runner execute here, never sent out again. */
const here = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.provideService(self, Placement.Placement, Placement.local)

/**
 * An entity's run is interrupted either by its caller (the client interrupted
 * the request: the run is cancelled, as in one process) or by the runner
 * letting the session's shard go (a shard moving, a slow shard lock refresh,
 * a shutdown): then the run is handed over, not cancelled. It runs with
 * `onInterrupt: "release"` (an interruption leaves it unfinished, its lease
 * given up, its journal kept), and when the interruption came from its caller
 * while this runner still holds the shard, it is cancelled here.
 */
const handingOver = (
  sharding: Sharding.Sharding["Type"],
  address: Entity.CurrentAddress["Type"],
  cancel: Effect.Effect<void, unknown, SessionStore.SessionStore>
) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R | SessionStore.SessionStore> =>
  Effect.onInterrupt(self, () =>
    sharding.hasShardId(address.shardId)
      ? Effect.ignoreLogged(here(cancel))
      : Effect.logInfo(`sessionflow: ${address.entityId} handed over (its shard left this runner): run released`))

/** @internal */
export const layerRunner = <W extends Workflow.Any>(
  options: RunnerOptions<W>
): Layer.Layer<never, never, Sharding.Sharding | SessionStore.SessionStore | Workflow.Context<W>> => {
  const workflows = new Map<string, Workflow.Any>(options.workflows.map((wf) => [wf.name, wf]))
  const wait = Duration.decode(options.failoverWait ?? defaultFailoverWait)
  const find = (name: string, sessionId: string): Effect.Effect<Workflow.Any, WorkflowError.PlacementError> => {
    const wf = workflows.get(name)
    return wf === undefined
      ? Effect.fail(
        new WorkflowError.PlacementError({
          reason: "remote",
          workflowName: name,
          sessionId,
          description: `workflow '${name}' is not registered on this runner`
        })
      )
      : Effect.succeed(wf)
  }
  type Requirements = SessionStore.SessionStore | Workflow.Context<W>
  // built for each session's entity, with its address
  const handlers = Effect.gen(function*() {
    const sharding = yield* Sharding.Sharding
    const address = yield* Entity.CurrentAddress
    const handOver = (wf: Workflow.Any, runId: string) =>
      handingOver(
        sharding,
        address,
        Workflow.cancel(wf, runId) as Effect.Effect<void, unknown, SessionStore.SessionStore>
      )
    return protocol.SessionEntity.of({
      Run: ({ payload }) =>
        Effect.flatMap(
          find(payload.workflow, payload.sessionId),
          (wf) =>
            Workflow.run(wf, payload.input, {
              ...protocol.runOptionsFromWire(payload.options, payload.sessionId, payload.runId),
              onInterrupt: "release"
            })
              .pipe(
                handOver(wf, payload.runId),
                waitForLease(wait),
                Effect.flatMap((output) => protocol.outputToWire(wf, output)),
                here
              ) as Effect.Effect<typeof protocol.RunOutput.Type, unknown, Requirements>
        ).pipe(
          Effect.mapError(toWire(payload.workflow, payload.sessionId))
        ),
      StreamRun: ({ payload }) =>
        Stream.unwrap(
          Effect.map(find(payload.workflow, payload.sessionId), (wf) =>
            Workflow.stream(
              wf,
              payload.input,
              protocol.runOptionsFromWire(payload.options, payload.sessionId, payload.runId)
            )
              .pipe(Stream.provideService(Placement.Placement, Placement.local)) as Stream.Stream<
                WorkflowEvent.WorkflowEvent,
                unknown,
                Requirements
              >)
        ).pipe(Stream.mapError(toWire(payload.workflow, payload.sessionId))),
      Continue: ({ payload }) =>
        Effect.flatMap(
          find(payload.workflow, ""),
          (wf) =>
            Workflow.continue(wf, payload.runId, payload.response, {
              ...protocol.continueOptionsFromWire(payload.options),
              onInterrupt: "release"
            })
              .pipe(
                handOver(wf, payload.runId),
                waitForLease(wait),
                Effect.flatMap((output) => protocol.outputToWire(wf, output)),
                here
              ) as Effect.Effect<typeof protocol.RunOutput.Type, unknown, Requirements>
        ).pipe(
          Effect.mapError(toWire(payload.workflow, ""))
        ),
      StreamContinue: ({ payload }) =>
        Stream.unwrap(
          Effect.map(find(payload.workflow, ""), (wf) =>
            Workflow.continueStream(
              wf,
              payload.runId,
              payload.response,
              protocol.continueOptionsFromWire(payload.options)
            )
              .pipe(Stream.provideService(Placement.Placement, Placement.local)) as Stream.Stream<
                WorkflowEvent.WorkflowEvent,
                unknown,
                Requirements
              >)
        ).pipe(Stream.mapError(toWire(payload.workflow, ""))),
      Cancel: ({ payload }) =>
        Effect.flatMap(
          find(payload.workflow, ""),
          (wf) =>
            Workflow.cancel(wf, payload.runId, payload.userId === undefined ? undefined : { userId: payload.userId })
              .pipe(
                here
              )
        ).pipe(Effect.mapError(toWire(payload.workflow, ""))),
      // the recovery loop's: a run whose owner stopped, carried on from its journal
      // (`claimRun`: only if its lease is still expired; a handoff releases it again)
      Resume: ({ payload }) =>
        Effect.flatMap(
          find(payload.workflow, ""),
          (wf) =>
            Workflow.resume(wf, payload.runId, {
              ...(payload.userId === undefined ? {} : { userId: payload.userId }),
              onInterrupt: "release"
            }).pipe(Effect.asVoid, here) as Effect.Effect<void, unknown, Requirements>
        ).pipe(Effect.mapError(toWire(payload.workflow, "")))
    })
  })
  const entity = protocol.SessionEntity.toLayer(handlers, {
    // one operation at a time per session: runs on one session never race
    concurrency: 1,
    // a run that dies answers its caller with the defect (as in one process),
    // instead of restarting the entity and running it again
    disableFatalDefects: true,
    ...(options.maxIdleTime === undefined ? {} : { maxIdleTime: options.maxIdleTime })
  }) as Layer.Layer<never, never, Sharding.Sharding | Requirements>
  if (options.recovery === false) return entity
  // the unfinished runs of the sessions this runner's shards hold, whose owner stopped
  const recovering = recovery.layer({
    workflows: options.workflows,
    ...(typeof options.recovery === "object" ? options.recovery : {})
  })
  return Layer.merge(entity, recovering)
}

/** A failure of the cluster itself (the message could not be stored or taken), as `PlacementError`. */
const fromClient = (workflowName: string, sessionId: string) => (error: unknown): unknown =>
  WorkflowError.isWorkflowError(error)
    ? error
    : new WorkflowError.PlacementError({
      reason: "delivery",
      workflowName,
      sessionId,
      description: WorkflowError.format(error)
    })

/** @internal */
export const layer: Layer.Layer<Placement.Placement, never, Sharding.Sharding | SessionStore.SessionStore> = Layer
  .effect(
    Placement.Placement,
    Effect.gen(function*() {
      const client = yield* protocol.SessionEntity.client
      const store = yield* SessionStore.SessionStore

      const sessionOf = (self: Workflow.Any, options: Workflow.RunOptions<unknown> | undefined): string =>
        options?.sessionId ?? self.sessionId ?? randomUUID()

      const runPayload = (self: Workflow.Any, input: unknown, options: Workflow.RunOptions<unknown> | undefined) => {
        const sessionId = sessionOf(self, options)
        return {
          sessionId,
          payload: {
            workflow: self.name,
            sessionId,
            // always an id: a run delivered again (its runner died) is the same run, carried on from its journal
            runId: options?.runId ?? randomUUID(),
            input,
            options: protocol.runOptionsToWire(options)
          }
        }
      }

      /**
       * The session of an existing run, to reach its entity. A run id the store
       * does not know goes to an entity of its own, where the workflow answers
       * as it does in one process (`RunNotFound`, `InvalidRunId`).
       */
      const entityOfRun = (self: Workflow.Any, runId: string) =>
        Effect.map(
          Effect.orElseSucceed(store.getRun(runId), () => Option.none()),
          (found) =>
            Option.match(found, {
              onNone: () => ({ sessionId: "", entity: protocol.entityId(self.name, `run:${runId}`) }),
              onSome: (lookup) => {
                const sessionId = lookup._tag === "Active" ? lookup.run.sessionId : lookup.record.sessionId
                return { sessionId, entity: protocol.entityId(self.name, sessionId) }
              }
            })
        )

      return Placement.remote({
        run: (self, input, options) => {
          const { payload, sessionId } = runPayload(self, input, options)
          return client(protocol.entityId(self.name, sessionId)).Run(payload).pipe(
            Effect.mapError(fromClient(self.name, sessionId)),
            Effect.flatMap((output) => protocol.outputFromWire(self, output)),
            Effect.withSpan("ClusterPlacement.run", { attributes: { workflow: self.name, sessionId } })
          )
        },
        stream: (self, input, options) => {
          const { payload, sessionId } = runPayload(self, input, options)
          return client(protocol.entityId(self.name, sessionId)).StreamRun(payload).pipe(
            Stream.mapError(fromClient(self.name, sessionId))
          )
        },
        continue: (self, runId, response, options) =>
          Effect.flatMap(entityOfRun(self, runId), ({ entity, sessionId }) =>
            client(entity).Continue({
              workflow: self.name,
              runId,
              response,
              options: protocol.continueOptionsToWire(options)
            }).pipe(
              Effect.mapError(fromClient(self.name, sessionId)),
              Effect.flatMap((output) => protocol.outputFromWire(self, output))
            )),
        continueStream: (self, runId, response, options) =>
          Stream.unwrap(Effect.map(entityOfRun(self, runId), ({ entity, sessionId }) =>
            client(entity).StreamContinue({
              workflow: self.name,
              runId,
              response,
              options: protocol.continueOptionsToWire(options)
            }).pipe(Stream.mapError(fromClient(self.name, sessionId))))),
        cancel: (self, runId, options) =>
          Effect.flatMap(entityOfRun(self, runId), ({ entity, sessionId }) =>
            client(entity).Cancel({
              workflow: self.name,
              runId,
              ...(options?.userId === undefined ? {} : { userId: options.userId })
            }).pipe(Effect.mapError(fromClient(self.name, sessionId))))
      })
    })
  )
