/**
 * The store a fixture process opens, named on its command line: `pg:<schema>`
 * for the local PostgreSQL (in that schema), anything else a SQLite file.
 */
import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { SessionStore } from "@sessionflow/core"
import { PgSessionStore } from "@sessionflow/store-pg"
import { SqliteSessionStore } from "@sessionflow/store-sqlite"
import { Effect, Layer } from "effect"
import { storeLayer as pgStoreLayer, testUrl } from "./store-pg/pg.js"

export const storeLayer = (spec: string) =>
  spec.startsWith("pg:")
    ? PgSessionStore.layer({ url: testUrl, schema: spec.slice("pg:".length) })
    : SqliteSessionStore.layer({ filename: spec })

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
