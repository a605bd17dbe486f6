import * as Sys from "/work/main/bench/src/systems/sessionflow.ts"
import * as Floor from "/work/main/bench/src/systems/floor.ts"
import { prefilled } from "/work/main/bench/src/workload.ts"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
const n = Number(process.argv[2] ?? 1_000_000)
const dir = mkdtempSync(`${tmpdir()}/p1m-`)
const mode = process.argv[3] ?? "changes"
const r = mode === "floor" ? await Floor.make({}) : await Sys.make({ filename: `${dir}/a.db`, typed: true, persist: mode as "changes" | "state" })
await r.seed("s", prefilled(n))
await r.run("s", 1)
const times: Array<number> = []
for (let i = 0; i < Number(process.env.RUNS ?? 5); i++) { (globalThis as any).gc?.(); const t0 = performance.now(); await r.run("s", 1); times.push(performance.now() - t0) }
console.log(mode, n, times.map((t) => t.toFixed(0)).join(" "))
await r.close()
