/**
 * The options of a chaos run, as the controller hands them to its workers
 * (one JSON argument), and what follows from them.
 */

export interface ChaosConfig {
  readonly store: "sqlite" | "pg"
  /** the store spec the processes open (see `test/stores.ts`) */
  readonly spec: string
  readonly seed: number
  /** how long faults and operations go on */
  readonly seconds: number
  /** client processes */
  readonly clients: number
  /** processes running `DurableRuns.layer` */
  readonly supervisors: number
  /** the run's folder: history, effects, snapshot */
  readonly dir: string
  /** the lease of every tracked run, in milliseconds */
  readonly leaseMillis: number
  /** the contended sessions */
  readonly sessions: ReadonlyArray<string>
  /** PostgreSQL: each process's pool */
  readonly maxConnections: number
  /** SQLite: how long a store operation waits for another connection's write lock */
  readonly lockTimeoutMillis: number
}

/** A process's pool name in `pg_stat_activity`: `chaos-<worker>`. */
export const applicationName = (worker: string): string => `chaos-${worker}`

/** The store options every chaos process opens its store with. */
export const storeOptions = (config: ChaosConfig, worker: string) => ({
  keepRuns: "all" as const,
  lockTimeout: config.lockTimeoutMillis,
  applicationName: applicationName(worker),
  maxConnections: config.maxConnections,
  // a pooled connection closed for idleness is still counted by the server
  // until its backend exits, while the pool may open its replacement: idle
  // closes would show as one connection too many in the samples
  idleTimeout: "1 hour" as const
})

/** The command that replays a run. */
export const replayCommand = (config: Pick<ChaosConfig, "store" | "seed" | "seconds" | "clients">): string =>
  `npm run chaos -- --store ${config.store} --seed ${config.seed} --seconds ${config.seconds}${
    config.clients === defaultClients ? "" : ` --processes ${config.clients}`
  }`

export const defaultClients = 3
