/**
 * A W5 run in its own process, so that its memory is its own: only the
 * system under test is loaded. Prints one JSON line.
 *
 *   child.ts w5 <system> <sessions> <concurrency> <warm-up sessions>
 */
import * as Sys from "./systems/index.ts"
import { check, cleanupTemp, gc, removeDb, tempDb } from "./util.ts"
import { STEPS } from "./workload.ts"

export interface ChildResult {
  readonly seconds: number
  readonly peakRssMb: number
  readonly baselineRssMb: number
}

const w5 = async (systemName: string, sessions: number, concurrency: number, warmup: number): Promise<ChildResult> => {
  const system = Sys.byName[systemName]
  if (system === undefined) throw new Error(`unknown system ${systemName}`)
  const file = tempDb(`w5-${systemName.replace(/\W+/g, "-")}`)
  const runner = await system.open(file)
  try {
    await runner.runSessions(Array.from({ length: warmup }, (_, i) => `warm-up-${i}`), concurrency)
    await gc()
    const baseline = process.memoryUsage().rss
    let peak = baseline
    const timer = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss)
    }, 5)
    const ids = Array.from({ length: sessions }, (_, i) => `session-${i}`)
    const t0 = performance.now()
    await runner.runSessions(ids, concurrency)
    const seconds = (performance.now() - t0) / 1000
    clearInterval(timer)
    peak = Math.max(peak, process.memoryUsage().rss)
    for (const id of [ids[0]!, ids[ids.length - 1]!]) check(`counter of ${id}`, await runner.counter(id), STEPS)
    return { seconds, peakRssMb: peak / 2 ** 20, baselineRssMb: baseline / 2 ** 20 }
  } finally {
    await runner.close()
    removeDb(file)
  }
}

if (process.argv[2] === "w5") {
  const [system, sessions, concurrency, warmup] = process.argv.slice(3)
  try {
    const result = await w5(system!, Number(sessions), Number(concurrency), Number(warmup))
    process.stdout.write(JSON.stringify(result) + "\n")
  } finally {
    cleanupTemp()
  }
}
