/**
 * sessionflow benchmarks, side by side with Mastra, LangGraph.js and the
 * physical floor. Prints a markdown table to stdout (progress goes to stderr) and
 * writes the figures to results.json (results-quick.json with --quick).
 *
 *   npm run bench                      # from the repository root
 *   npm --prefix bench run bench -- --quick
 *   npm --prefix bench run bench -- --only W1,W3 --reps 5
 *   npm --prefix bench run bench -- --only W2PG,W5PG  # PostgreSQL (SESSIONFLOW_BENCH_DATABASE_URL)
 */
import { existsSync } from "node:fs"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import type { Figure } from "./measure.ts"

const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    only: { type: "string" },
    reps: { type: "string" },
    "langgraph-all": { type: "boolean", default: false },
    out: { type: "string" }
  }
})

// The bench runs sessionflow from the compiled dist of its packages (`npm run
// build` first), whose dependencies (effect, @effect/sql-sqlite-node, ...) come
// from the root node_modules.
const root = new URL("../../", import.meta.url)
for (const [pkg, dep] of [["packages/core", "effect"], ["packages/store-sqlite", "@effect/sql-sqlite-node"]] as const) {
  try {
    createRequire(new URL(`${pkg}/package.json`, root)).resolve(dep)
  } catch {
    process.stderr.write(
      `Cannot resolve ${dep} from ${pkg}: run \`npm install\` at the repository root first, then \`npm run bench\`.\n`
    )
    process.exit(1)
  }
}

for (const pkg of ["core", "store-sqlite", "store-pg", "openai"]) {
  if (!existsSync(new URL(`packages/${pkg}/dist/index.js`, root))) {
    process.stderr.write(`packages/${pkg}/dist is missing: run \`npm run build\` at the repository root first.\n`)
    process.exit(1)
  }
}

const { fullConfig, quickConfig, w1, w2, w2e, w2pg, w3, w3c, w4, w5, w5pg, w6 } = await import("./workloads.ts")
const Postgres = await import("./systems/postgres.ts")
const { w7 } = await import("./w7.ts")
const { log } = await import("./measure.ts")
const Report = await import("./report.ts")
const { cleanupTemp } = await import("./util.ts")

const base = args.quick ? quickConfig(args["langgraph-all"]) : fullConfig(args["langgraph-all"])
const config = { ...base, reps: args.reps === undefined ? base.reps : Math.max(1, Number(args.reps)) }
const workloads = {
  W1: w1,
  W2: w2,
  W2E: w2e,
  W3: w3,
  W3C: w3c,
  W4: w4,
  W5: w5,
  W6: w6,
  W7: w7,
  W2PG: w2pg,
  W5PG: w5pg
} as const
/** The workloads that need the PostgreSQL bench database (skipped, with the reason, when it is not reachable). */
const onPostgres: ReadonlySet<string> = new Set(["W2PG", "W5PG"])
const selected = (args.only?.split(",").map((s) => s.trim().toUpperCase()) ?? Object.keys(workloads)) as Array<
  keyof typeof workloads
>

const started = performance.now()
const results: Array<Figure> = []
const skipped: Array<{ workload: string; reason: string }> = []
process.on("exit", cleanupTemp)
try {
  for (const key of selected) {
    const run = workloads[key]
    if (run === undefined) {
      skipped.push({ workload: key, reason: "unknown workload" })
      continue
    }
    const unreachable = onPostgres.has(key) ? await Postgres.reachable() : undefined
    if (unreachable !== undefined) {
      skipped.push({ workload: key, reason: unreachable })
      continue
    }
    results.push(...(await run(config)))
  }
} finally {
  cleanupTemp()
}
const seconds = (performance.now() - started) / 1000

const report = Report.results({ config, seconds, figures: results, skipped })
process.stdout.write(Report.markdown(report))
const out = args.out ??
  fileURLToPath(new URL(config.quick ? "../results-quick.json" : "../results.json", import.meta.url))
Report.write(out, report)
log(`wrote ${out}`)
