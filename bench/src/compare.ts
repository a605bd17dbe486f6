/**
 * Compares two results files of `npm run bench` (before and after a change):
 * the targets, then every figure that both have. Absolute figures of two runs
 * are only as comparable as the machine was quiet; the ratios to a reference
 * measured in the same run are the steadier measure.
 *
 *   npm --prefix bench run compare -- before.json after.json
 */
import { readFileSync } from "node:fs"
import { type Figure, format } from "./measure.ts"
import type { Results } from "./report.ts"

const [beforeFile, afterFile] = process.argv.slice(2)
if (beforeFile === undefined || afterFile === undefined) {
  process.stderr.write("usage: compare <before.json> <after.json>\n")
  process.exit(2)
}
const read = (file: string) => JSON.parse(readFileSync(file, "utf8")) as Results
const before = read(beforeFile)
const after = read(afterFile)

const lines: Array<string> = [
  `before: ${beforeFile} (${before.generatedAt}${before.quick ? ", quick" : ""}); ` +
  `after: ${afterFile} (${after.generatedAt}${after.quick ? ", quick" : ""})`,
  ""
]

const targetsAfter = new Map(after.targets.map((t) => [t.id, t]))
const targets = before.targets.filter((t) => targetsAfter.has(t.id))
if (targets.length > 0) {
  lines.push("| target | before | after | goal | met after |", "|---|--:|--:|--:|---|")
  for (const t of targets) {
    const a = targetsAfter.get(t.id)!
    const x = t.reference === undefined ? "" : "×"
    lines.push(
      `| ${t.id} | ${format(t.median)}${x} | ${format(a.median)}${x} | ≤ ${format(t.max)}${x} | ${
        a.met ? "yes" : "**no**"
      } |`
    )
  }
  lines.push("")
}

const key = (f: Figure) => `${f.workload}\u0000${f.case}\u0000${f.system}\u0000${f.unit}`
const afterFigures = new Map(after.figures.map((f) => [key(f), f]))
lines.push(
  "| workload | case | system | unit | before | after | after / before | × reference before → after |",
  "|---|---|---|---|--:|--:|--:|---|"
)
for (const f of before.figures) {
  const a = afterFigures.get(key(f))
  if (a === undefined) continue
  const ratio = f.ratio !== undefined && a.ratio !== undefined
    ? `${format(f.ratio.median)}× → ${format(a.ratio.median)}× <sub>${a.ratio.to}</sub>`
    : ""
  lines.push(
    `| ${f.workload} | ${f.case} | ${f.system} | ${f.unit} | ${format(f.median)} | ${format(a.median)} | ${
      format(a.median / f.median)
    } | ${ratio} |`
  )
}
process.stdout.write(lines.join("\n") + "\n")
