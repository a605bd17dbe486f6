/**
 * What the server's load figures share: timing `count` calls made
 * `concurrency` at a time, summing them up as requests/s, p50 and p99, and
 * the request they time (`POST /workflows/bench/runs` as JSON, a new session
 * each).
 */

/** The latencies of a batch of calls, its wall time and its failures. */
export interface Timed {
  readonly latencies: ReadonlyArray<number>
  readonly seconds: number
  readonly failures: number
}

export interface Summary {
  readonly clients: number
  readonly requests: number
  readonly perSecond: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly failures: number
}

export const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!

/** `count` calls of `call` (true: it succeeded), `concurrency` at a time, each timed. */
export const timeCalls = async (
  call: (i: number) => Promise<boolean>,
  concurrency: number,
  count: number
): Promise<Timed> => {
  const latencies: Array<number> = []
  let failures = 0
  let next = 0
  const started = performance.now()
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) {
      const i = next++
      const t0 = performance.now()
      const ok = await call(i)
      latencies.push(performance.now() - t0)
      if (!ok) failures++
    }
  }))
  return { latencies, seconds: (performance.now() - started) / 1000, failures }
}

/** One figure from one or more batches: requests over their summed wall time, percentiles over all latencies. */
export const summarize = (concurrency: number, batches: ReadonlyArray<Timed>): Summary => {
  const latencies = batches.flatMap((b) => b.latencies).sort((a, b) => a - b)
  const seconds = batches.reduce((sum, b) => sum + b.seconds, 0)
  return {
    clients: concurrency,
    requests: latencies.length,
    perSecond: Math.round(latencies.length / seconds),
    p50Ms: Math.round(percentile(latencies, 0.5) * 10) / 10,
    p99Ms: Math.round(percentile(latencies, 0.99) * 10) / 10,
    failures: batches.reduce((sum, b) => sum + b.failures, 0)
  }
}

/**
 * A run of the bench workflow over HTTP on the server at `url`, session
 * `${prefix}-${i}`; a request that fails (a status other than 200, a
 * connection reset) is counted, not fatal.
 */
export const postRun = (url: string, prefix: string) => async (i: number): Promise<boolean> => {
  try {
    const response = await fetch(`${url}/workflows/bench/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: null, sessionId: `${prefix}-${i}` })
    })
    await response.arrayBuffer()
    return response.status === 200
  } catch {
    return false
  }
}
