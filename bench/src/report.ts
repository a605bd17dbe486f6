/**
 * The markdown report and the results file of a bench run.
 */
import { writeFileSync } from "node:fs"
import { availableParallelism, cpus, totalmem } from "node:os"
import { type Figure, format } from "./measure.ts"
import * as Targets from "./targets.ts"
import type { Config } from "./workloads.ts"

export interface Results {
  readonly generatedAt: string
  readonly node: string
  readonly platform: string
  readonly cores: number
  readonly cpu: string | undefined
  readonly quick: boolean
  readonly reps: number
  readonly config: Config
  readonly seconds: number
  readonly figures: ReadonlyArray<Figure>
  readonly targets: ReadonlyArray<Targets.Target>
  readonly skipped: ReadonlyArray<{ readonly workload: string; readonly reason: string }>
  /** when the run was made by several processes at once (see merge.ts): their results files */
  readonly parts?:
    | ReadonlyArray<{ readonly workloads: string; readonly reps: number; readonly seconds: number }>
    | undefined
}

export const results = (options: {
  readonly config: Config
  readonly seconds: number
  readonly figures: ReadonlyArray<Figure>
  readonly skipped: Results["skipped"]
  readonly parts?: Results["parts"]
}): Results => ({
  generatedAt: new Date().toISOString(),
  node: process.version,
  platform: `${process.platform} ${process.arch}`,
  cores: availableParallelism(),
  cpu: cpus()[0]?.model,
  quick: options.config.quick,
  reps: options.config.reps,
  config: options.config,
  seconds: options.seconds,
  figures: options.figures,
  targets: Targets.evaluate(options.config, options.figures),
  skipped: options.skipped,
  ...(options.parts === undefined ? {} : { parts: options.parts })
})

export const markdown = (r: Results): string => {
  const lines: Array<string> = []
  const repetitions = r.parts !== undefined && new Set(r.parts.map((p) => p.reps)).size > 1
    ? r.parts.map((p) => `${p.workloads}: ${p.reps === 1 ? "one repetition" : `median of ${p.reps}`}`).join(", ")
    : `median of ${r.reps} runs`
  lines.push(
    `sessionflow benchmarks — ${r.quick ? "QUICK smoke run, not for comparison" : repetitions}; ` +
      `Node ${r.node}, ${r.cores} cores (${r.cpu ?? "?"}), ${format(totalmem() / 2 ** 30)} GB; ${
        format(r.seconds)
      } s in total${r.parts === undefined ? "" : ` (${r.parts.length} processes at once)`}`,
    "",
    "| workload | case | system | median | unit | × reference | each run |",
    "|---|---|---|--:|---|--:|---|"
  )
  for (const f of r.figures) {
    const name = f.note === undefined ? f.system : `${f.system} <sub>${f.note}</sub>`
    const same = r.figures.filter((g) => g.workload === f.workload && g.case === f.case && g.unit === f.unit)
    const isReference = same.some((g) => g.ratio?.to === f.system)
    // name the reference when the figures of this case are divided by more than one
    const several = new Set(same.flatMap((g) => g.ratio === undefined ? [] : [g.ratio.to])).size > 1
    const ratio = f.ratio === undefined
      ? isReference ? "reference" : ""
      : `${format(f.ratio.median)}×${several ? ` <sub>${f.ratio.to}</sub>` : ""}`
    lines.push(
      `| ${f.workload} | ${f.case} | ${name} | ${format(f.median)} | ${f.unit} | ${ratio} | ${
        f.values.map(format).join(" / ")
      } |`
    )
  }
  for (const s of r.skipped) lines.push("", `${s.workload}: ${s.reason}`)
  if (r.targets.length > 0) {
    lines.push(
      "",
      "Targets (ratios within each repetition, then their median; the machine is shared, so read them as noisy):",
      "",
      ...Targets.table(r.targets)
    )
  }
  return lines.join("\n") + "\n"
}

export const write = (file: string, r: Results): void => writeFileSync(file, JSON.stringify(r, null, 2) + "\n")
