/**
 * Run placement on `@effect/cluster`: every session is an entity, keyed by
 * its workflow's name and its id, sharded over the cluster's runners. The
 * run operations (run, stream, continue, cancel) are the entity's messages;
 * its mailbox takes them one at a time, so runs on one session never race
 * each other, whichever server they came from. Runs still commit through the
 * `SessionStore` (its version check stays, a guard for the moment a shard
 * moves). Runs and continues are persisted messages: when a runner dies, its
 * shards move and the session's next owner gets them again and carries them
 * on from their journals.
 *
 * ```ts
 * // the runner: executes the runs of the sessions its shards hold
 * const Runner = ClusterPlacement.layerRunner({ workflows: [orders] })
 * // any process: `Workflow.run`, `stream`, `continue`, `cancel` go to the session's runner
 * const Placed = ClusterPlacement.layer
 * ```
 *
 * @since 0.1.0
 */
import type * as Entity from "@effect/cluster/Entity"
import type * as Sharding from "@effect/cluster/Sharding"
import type * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SingleRunner from "@effect/cluster/SingleRunner"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { Placement, SessionStore, Workflow } from "@sessionflow/core"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Layer from "effect/Layer"
import * as internal from "./internal/placement.js"
import * as protocol from "./internal/protocol.js"

/**
 * The session entity (type `"sessionflow/Session"`), with its protocol: the
 * messages `Run`, `StreamRun`, `Continue`, `StreamContinue`, `Cancel` and
 * `Resume` (a runner's recovery loop carrying on an unfinished run whose
 * owner stopped). `Run`, `Continue` and `Cancel` are persisted; the streams
 * and `Resume` are not (a stream whose runner dies fails, like a stream
 * whose process dies; a lost `Resume` is sent again at the next look).
 *
 * @since 0.1.0
 * @category entities
 */
export const SessionEntity: Entity.Entity<
  "sessionflow/Session",
  | typeof protocol.Run
  | typeof protocol.StreamRun
  | typeof protocol.Continue
  | typeof protocol.StreamContinue
  | typeof protocol.Cancel
  | typeof protocol.Resume
> = protocol.SessionEntity

/**
 * The entity id of a session: `workflowName/sessionId` (a SHA-256 digest
 * when that is longer than the 255 characters `SqlMessageStorage` keeps).
 *
 * @since 0.1.0
 * @category entities
 */
export const entityId: (workflowName: string, sessionId: string) => string = protocol.entityId

/**
 * @since 0.1.0
 * @category options
 */
export interface RunnerOptions<W extends Workflow.Any> {
  /** the workflows whose runs this runner executes (by name; every runner should register the same) */
  readonly workflows: ReadonlyArray<W>
  /**
   * How long a run delivered again after its runner died waits for the dead
   * runner's lease on it to expire (it is `RunInProgress` until then, unless
   * the dead runner was a process of this host: then it is resumed at once,
   * see `SessionStore.ownerGone`), after which it is resumed from its
   * journal; default 1 minute. Keep the runs'
   * `leaseDuration` well below it.
   */
  readonly failoverWait?: Duration.DurationInput | undefined
  /** how long an idle session's entity stays in memory (default: the cluster's `entityMaxIdleTime`) */
  readonly maxIdleTime?: Duration.DurationInput | undefined
  /**
   * The runner's recovery loop (default on): it looks at the store's
   * unfinished runs of these workflows every `pollInterval` (default 1
   * second), and each whose owner stopped (its lease expired, or given up)
   * and whose session's shard this runner holds is sent as a `Resume` to the
   * session's entity, which carries it on from its journal (taking it with
   * the store's conditional `claimRun`: never two owners). That is how a run
   * answered `RunUnfinished` is completed, and a run handed over in a shard
   * move whose message is not delivered again. A resume that fails
   * `maxAttempts` times (default 3) with the run still unfinished is left
   * alone by this runner (`Workflow.recover`). `false`: no loop.
   */
  readonly recovery?:
    | boolean
    | {
      readonly pollInterval?: Duration.DurationInput | undefined
      readonly maxAttempts?: number | undefined
    }
    | undefined
}

/**
 * Registers the session entity with this process's `Sharding`: it executes
 * the runs of the sessions whose shards it holds, in this process (with the
 * local placement), one operation at a time per session. It needs what the
 * workflows' steps need and the `SessionStore` they commit to.
 *
 * A run interrupted because its shard leaves this runner (a shard moving, a
 * slow shard lock refresh, a shutdown) is handed over, not cancelled: it is
 * left unfinished, its lease given up, its journal kept, and the session's
 * next owner carries it on (its message is delivered again; else the
 * recovery loop, see `recovery`). A run interrupted by its caller while this
 * runner keeps the shard is cancelled, as in one process.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerRunner: <W extends Workflow.Any>(
  options: RunnerOptions<W>
) => Layer.Layer<never, never, Sharding.Sharding | SessionStore.SessionStore | Workflow.Context<W>> =
  internal.layerRunner

/**
 * The cluster placement: `Workflow.run`, `stream`, `continue`,
 * `continueStream` and `cancel` send the operation to the session's entity,
 * wherever its runner is, and wait for its outcome. A run gets an id here
 * when it has none, so that a delivery after a runner died is the same run.
 * A workflow's own errors come back as they are when they are sessionflow's
 * (`WorkflowError`); a step's other errors have no Schema to cross with and
 * arrive as `PlacementError` (`reason: "remote"`, with their tag and
 * message). The store is used to find the session of a run to continue or
 * cancel.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Placement.Placement, never, Sharding.Sharding | SessionStore.SessionStore> =
  internal.layer

/**
 * `@effect/cluster` settings for sessions: a dead runner's sessions move
 * within seconds rather than minutes, and a message stored while its runner
 * was unreachable is read within a second. Spread them under your own
 * (`{ ...ClusterPlacement.shardingConfig, runnerAddress }`); `layerSingleRunner`
 * uses them unless told otherwise.
 *
 * | setting | here | `@effect/cluster`'s default |
 * |---|---|---|
 * | `runnerHealthCheckInterval` | 1 s | 1 minute |
 * | `refreshAssignmentsInterval` | 1 s | 3 s |
 * | `shardLockRefreshInterval` | 3 s | 10 s |
 * | `shardLockExpiration` | 10 s | 35 s |
 * | `entityMessagePollInterval` | 1 s | 10 s |
 * | `entityReplyPollInterval` | 100 ms | 200 ms |
 *
 * The shard locks are not refreshed more often than every 3 seconds: a
 * refresh that takes longer than its interval counts as lost, and the
 * runner then gives up all its shards, interrupting their runs.
 *
 * @since 0.1.0
 * @category options
 */
export const shardingConfig: Partial<ShardingConfig.ShardingConfig["Type"]> = {
  runnerHealthCheckInterval: Duration.seconds(1),
  refreshAssignmentsInterval: Duration.seconds(1),
  shardLockRefreshInterval: Duration.seconds(3),
  shardLockExpiration: Duration.seconds(10),
  entityMessagePollInterval: Duration.seconds(1),
  entityReplyPollInterval: Duration.millis(100)
}

/**
 * @since 0.1.0
 * @category options
 */
export interface SingleRunnerOptions<W extends Workflow.Any> extends RunnerOptions<W> {
  /**
   * the cluster's settings (`@effect/cluster`'s `ShardingConfig`), over
   * {@link shardingConfig} (the environment's for the rest)
   */
  readonly shardingConfig?: Partial<ShardingConfig.ShardingConfig["Type"]> | undefined
  /** where the runner's shard locks live: `"sql"` (default) or `"memory"` */
  readonly runnerStorage?: "memory" | "sql" | undefined
}

/**
 * One process as a whole cluster (`@effect/cluster`'s `SingleRunner`): the
 * runner and the placement together, its messages stored through the
 * `SqlClient` given (SQLite or PostgreSQL). Runs on one session queue in its
 * entity's mailbox; a run interrupted by a crash is delivered again when the
 * process starts again.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerSingleRunner = <W extends Workflow.Any>(
  options: SingleRunnerOptions<W>
): Layer.Layer<
  Placement.Placement,
  ConfigError.ConfigError,
  SqlClient.SqlClient | SessionStore.SessionStore | Workflow.Context<W>
> =>
  Layer.merge(layer, layerRunner(options)).pipe(
    Layer.provide(SingleRunner.layer({
      shardingConfig: { ...shardingConfig, ...options.shardingConfig },
      runnerStorage: options.runnerStorage
    }))
  )
