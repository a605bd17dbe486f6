/**
 * Starts a TypeScript script as a separate OS process: `node --import tsx
 * <script>`. This is one process, so its pid is the script's own and a signal
 * sent to it reaches the script. (The `tsx` binary would start a second node
 * process for the script and relay signals to it, but a SIGKILL cannot be
 * relayed: the script would keep running.)
 */
import { type ChildProcessWithoutNullStreams, spawn, type SpawnOptionsWithoutStdio } from "node:child_process"
import { createRequire } from "node:module"
import { pathToFileURL } from "node:url"

/** tsx's loader, by absolute URL, so that it resolves whatever the working directory */
const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href

/** Spawns `node --import tsx <script> ...args`, with stdin, stdout and stderr piped. */
export const spawnTypeScript = (
  script: string,
  args: ReadonlyArray<string>,
  options?: SpawnOptionsWithoutStdio
): ChildProcessWithoutNullStreams =>
  spawn(process.execPath, ["--import", tsxLoader, script, ...args], { ...options, stdio: "pipe" })
