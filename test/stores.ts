/**
 * The store a fixture process opens, named on its command line: `pg:<schema>`
 * for the local PostgreSQL (in that schema), anything else a SQLite file.
 */
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { SessionStore } from "@sessionflow/core"
import { PgSessionStore } from "@sessionflow/store-pg"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { type Duration, Effect, Layer } from "effect"
import { storeLayer as pgStoreLayer, testUrl } from "./store-pg/pg.js"

/** Options of the store a spec opens (the PostgreSQL pool's only where they name it). */
export interface StoreSpecOptions {
  readonly keepRuns?: number | "all" | undefined
  /** SQLite: how long an operation waits for another connection's write lock */
  readonly lockTimeout?: Duration.DurationInput | undefined
  /** PostgreSQL: the pool's name in `pg_stat_activity` */
  readonly applicationName?: string | undefined
  /** PostgreSQL: the pool's most connections */
  readonly maxConnections?: number | undefined
  /** PostgreSQL: how long a pooled connection stays idle before it is closed */
  readonly idleTimeout?: Duration.DurationInput | undefined
}

export const storeLayer = (spec: string, options: StoreSpecOptions = {}) =>
  spec.startsWith("pg:")
    ? PgSessionStore.layer({
      url: testUrl,
      schema: spec.slice("pg:".length),
      keepRuns: options.keepRuns,
      applicationName: options.applicationName,
      maxConnections: options.maxConnections,
      idleTimeout: options.idleTimeout
    })
    : SqliteSessionStore.layer({ filename: spec, keepRuns: options.keepRuns, lockTimeout: options.lockTimeout })

/** The stores an in-process test runs on, each fresh: memory, a SQLite file, a PostgreSQL schema. */
export const freshStores: ReadonlyArray<readonly [string, Layer.Layer<SessionStore.SessionStore, unknown>]> = [
  ["memory", SessionStore.layerMemory],
  [
    "SQLite",
    Layer.unwrapScoped(
      Effect.map(
        Effect.flatMap(FileSystem.FileSystem, (fs) => fs.makeTempDirectoryScoped({ prefix: "sessionflow-" })),
        (dir) => SqliteSessionStore.layer({ filename: `${dir}/sessions.db` })
      )
    ).pipe(Layer.provide(NodeFileSystem.layer))
  ],
  ["PostgreSQL", pgStoreLayer()]
]
