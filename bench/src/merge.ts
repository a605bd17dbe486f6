/**
 * Merges the results files of bench processes that ran at once, each with
 * `--only` some workloads (on a busy machine several processes get through
 * the bench sooner), into one results file and one report. The parts may
 * differ in their number of repetitions (`--reps`); the report says which.
 *
 *   npm --prefix bench run merge -- part1.json part2.json [--out results.json]
 */
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { log } from "./measure.ts"
import * as Report from "./report.ts"

const { positionals, values } = parseArgs({ allowPositionals: true, options: { out: { type: "string" } } })
const parts = positionals.map((file) => JSON.parse(readFileSync(file, "utf8")) as Report.Results)
const first = parts[0]
if (first === undefined) {
  process.stderr.write("usage: merge <results.json>... [--out results.json]\n")
  process.exit(2)
}
const withoutReps = (c: Report.Results["config"]) => JSON.stringify({ ...c, reps: 0 })
for (const p of parts) {
  if (withoutReps(p.config) !== withoutReps(first.config)) {
    throw new Error("the parts were run with different configurations")
  }
}
const order = ["W1", "W2", "W3", "W4", "W5", "W6"]
const figures = parts.flatMap((p) => p.figures).sort((a, b) =>
  order.indexOf(a.workload.slice(0, 2)) - order.indexOf(b.workload.slice(0, 2))
)
const report = Report.results({
  config: { ...first.config, reps: Math.min(...parts.map((p) => p.reps)) },
  seconds: Math.max(...parts.map((p) => p.seconds)),
  figures,
  skipped: parts.flatMap((p) => p.skipped),
  parts: parts.map((p) => ({
    workloads: [...new Set(p.figures.map((f) => f.workload.slice(0, 2)))].join(","),
    reps: p.reps,
    seconds: p.seconds
  }))
})
process.stdout.write(Report.markdown(report))
const out = values.out ??
  fileURLToPath(new URL(first.quick ? "../results-quick.json" : "../results.json", import.meta.url))
Report.write(out, report)
log(`wrote ${out}`)
