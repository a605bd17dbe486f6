/**
 * Owner ids: who holds the lease of a running run. An owner id names the
 * host and the process of its store (`<host>:<pid>:<uuid>`, the uuid making
 * it unique per store instance), so that a process can tell that the owner
 * of a run is a process of its own host that no longer exists, and take the
 * run over without waiting for its lease.
 *
 * The host is the host name with, on Linux, the process-id namespace: two
 * containers that share a host name but not their process ids are two hosts.
 *
 * @internal
 */

/** The parts of an owner id. @internal */
export interface OwnerId {
  /** the host (its name, URI-encoded, and its process-id namespace where known) */
  readonly host: string
  readonly pid: number
  readonly unique: string
}

/** A Node.js built-in module, when this runtime has one (none in a browser or before Node 20.16). */
const builtin = <A>(id: string): A | undefined => {
  try {
    const node = typeof process === "object" ? process : undefined
    const get = node?.getBuiltinModule as ((id: string) => unknown) | undefined
    return get === undefined ? undefined : (get.call(node, id) as A | undefined)
  } catch {
    return undefined
  }
}

let cachedHost: string | undefined | null = null

/**
 * This process's host, as owner ids name it; undefined when it cannot be
 * known (then its runs are taken over only when their lease expires).
 *
 * @internal
 */
export const thisHost = (): string | undefined => {
  if (cachedHost !== null) return cachedHost
  let host: string | undefined
  try {
    const name = builtin<{ hostname(): string }>("node:os")?.hostname()
    if (name !== undefined && name.length > 0) {
      let namespace: string | undefined
      try {
        const link = builtin<{ readlinkSync(path: string): string }>("node:fs")?.readlinkSync("/proc/self/ns/pid")
        namespace = link === undefined ? undefined : /^pid:\[(\d+)\]$/.exec(link)?.[1]
      } catch {
        namespace = undefined
      }
      host = encodeURIComponent(name) + (namespace === undefined ? "" : `+${namespace}`)
    }
  } catch {
    host = undefined
  }
  cachedHost = host
  return host
}

const thisPid = ():
  | number
  | undefined => (typeof process === "object" && typeof process.pid === "number" ? process.pid : undefined)

/**
 * A new owner id for a store of this process.
 *
 * @internal
 */
export const make = (): string => `${thisHost() ?? "?"}:${thisPid() ?? "?"}:${crypto.randomUUID()}`

/**
 * The host and process an owner id names; undefined for an id that names
 * none (an older form, an unknown host, no owner).
 *
 * @internal
 */
export const parse = (owner: string): OwnerId | undefined => {
  const match = /^([^:?]+):([1-9]\d{0,9}):(.+)$/.exec(owner)
  if (match === null) return undefined
  const pid = Number(match[2])
  return Number.isSafeInteger(pid) ? { host: match[1]!, pid, unique: match[3]! } : undefined
}

/**
 * Whether the process `pid` of this host exists (`process.kill(pid, 0)`: no
 * such process is `ESRCH`; one of another user is `EPERM`, so it exists).
 * Undefined when it cannot be told.
 *
 * @internal
 */
export const processExists = (pid: number): boolean | undefined => {
  if (typeof process !== "object" || typeof process.kill !== "function") return undefined
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    const code = typeof error === "object" && error !== null ? (error as { readonly code?: unknown }).code : undefined
    return code === "ESRCH" ? false : code === "EPERM" ? true : undefined
  }
}

/**
 * Whether the process an owner id names is known to be gone: the id names
 * this host (`here`, by default this process's) and a process id that no
 * process of it has. An owner on another host, or one that cannot be told,
 * is not gone: its run waits for its lease. A process id that was reused by
 * a new process counts as alive (its run waits for its lease too).
 *
 * @internal
 */
export const gone = (owner: string, here: string | undefined = thisHost()): boolean => {
  const parsed = parse(owner)
  if (parsed === undefined || here === undefined || parsed.host !== here || parsed.pid === thisPid()) return false
  return processExists(parsed.pid) === false
}
