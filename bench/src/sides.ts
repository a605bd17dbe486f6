/**
 * What the before-vs-after scripts (`server-ab.ts`, `sqlite-replay.ts`)
 * share: their options, this tree and the other ("before", a checkout of an
 * earlier version with its node_modules), the bench scripts copied into the
 * other tree for the run, and each side's script run from its own tree's
 * sources, read line by line.
 */
import * as childProcess from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as readline from "node:readline"
import { fileURLToPath } from "node:url"

/** A command-line option's value: the argument after `name`. */
export const option = (name: string): string | undefined => {
  const index = process.argv.indexOf(name)
  return index > 0 ? process.argv[index + 1] : undefined
}

/** This tree's root ("after"). */
export const afterRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")

/** The tree to compare with (`--before DIR`), required. */
export const beforeRootOption = (): string => {
  const root = option("--before")
  if (root === undefined) {
    throw new Error("--before DIR: a checkout of the version to compare with, with its node_modules")
  }
  return path.resolve(root)
}

/**
 * Copies the bench scripts `files` (paths from a tree's root) from this tree
 * into `beforeRoot` where it lacks them, so that each side runs them on its
 * own code (they must only use what every compared version has); gives back
 * what removes the copies.
 */
export const copyScripts = (beforeRoot: string, files: ReadonlyArray<string>): () => void => {
  const copied = files.filter((file) => !fs.existsSync(path.join(beforeRoot, file)))
  for (const file of copied) fs.copyFileSync(path.join(afterRoot, file), path.join(beforeRoot, file))
  return () => {
    for (const file of copied) fs.rmSync(path.join(beforeRoot, file), { force: true })
  }
}

/** `/proc/<pid>/stat`'s utime + stime (fields 14 and 15, in clock ticks of 10 ms) in ms; undefined without it. */
const processCpuMs = (pid: number | undefined): number | undefined => {
  if (pid === undefined) return undefined
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // the fields after the command name, which is in parentheses and may hold spaces
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return undefined
  }
}

/** A side's script running, stopped with this process at the latest. */
export interface Side {
  /** the next line of its output that starts with `prefix`; fails when it exits first */
  readonly line: (prefix: string) => Promise<string>
  readonly signal: (signal: NodeJS.Signals) => void
  /**
   * the CPU time its process has used so far in ms (user + system,
   * all threads), where `/proc` tells it (Linux), else undefined
   */
  readonly cpuMs: () => number | undefined
  readonly exited: Promise<void>
  /** SIGTERM, and its exit */
  readonly stop: () => Promise<void>
}

/** Runs `script` (a path from the tree's root) from `root`'s own sources (tsx), with `nodeArgs` before it. */
export const spawnSide = (
  root: string,
  label: string,
  script: string,
  args: ReadonlyArray<string>,
  nodeArgs: ReadonlyArray<string> = []
): Side => {
  const child = childProcess.spawn(
    process.execPath,
    [...nodeArgs, "--conditions=@sessionflow/source", "--import", "tsx", script, ...args],
    { cwd: root, stdio: ["ignore", "pipe", "inherit"] }
  )
  process.once("exit", () => child.kill("SIGTERM"))
  let code: number | null | undefined
  const exited = new Promise<void>((resolve) =>
    child.once("exit", (exitCode) => {
      code = exitCode
      resolve()
    })
  )
  const lines = readline.createInterface({ input: child.stdout })
  const line = (prefix: string) =>
    new Promise<string>((resolve, reject) => {
      const onLine = (text: string) => {
        if (!text.startsWith(prefix)) return
        lines.off("line", onLine)
        resolve(text)
      }
      lines.on("line", onLine)
      void exited.then(() => reject(new Error(`the ${label} process exited (${code}) before it printed ${prefix}`)))
    })
  return {
    line,
    signal: (signal) => child.kill(signal),
    cpuMs: () => processCpuMs(child.pid),
    exited,
    stop: () => {
      child.kill("SIGTERM")
      return exited
    }
  }
}
