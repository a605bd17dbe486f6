#!/usr/bin/env node
/**
 * `npm run pack [-- <folder>] [--json]`: packs every workspace package that is
 * not private (read from the root package.json's `workspaces`) into one folder,
 * `packs/` by default. Each package's `prepack` builds its `dist/` first.
 * Without `--json` it then prints the tarballs and the command that installs
 * them, with their peer dependencies, into an app; with `--json` it prints
 * npm pack's JSON report alone.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

const root = path.resolve(import.meta.dirname, "..")
const readJson = (file) => JSON.parse(fs.readFileSync(file, "utf8"))

const args = process.argv.slice(2)
const json = args.includes("--json")
const destination = path.resolve(args.find((a) => !a.startsWith("--")) ?? path.join(root, "packs"))

const packages = readJson(path.join(root, "package.json")).workspaces
  .map((dir) => ({ dir, manifest: readJson(path.join(root, dir, "package.json")) }))
  .filter(({ manifest }) => manifest.private !== true)
const names = new Set(packages.map(({ manifest }) => manifest.name))

fs.mkdirSync(destination, { recursive: true })
for (const { manifest } of packages) {
  const old = `${manifest.name.replace(/^@/, "").replace("/", "-")}-`
  for (const file of fs.readdirSync(destination)) {
    if (file.startsWith(old) && file.endsWith(".tgz")) fs.rmSync(path.join(destination, file))
  }
}

const report = execFileSync(
  "npm",
  ["pack", ...packages.flatMap(({ dir }) => ["--workspace", dir]), "--pack-destination", destination, "--json"],
  { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], maxBuffer: 64 * 1024 * 1024 }
)

if (json) {
  process.stdout.write(report)
} else {
  const peers = new Map()
  for (const { manifest } of packages) {
    for (const [peer, range] of Object.entries(manifest.peerDependencies ?? {})) {
      if (!names.has(peer)) peers.set(peer, range)
    }
  }
  const tarballs = JSON.parse(report).map((t) => path.join(destination, t.filename))
  console.log(`${tarballs.length} packages packed into ${destination}:`)
  for (const tarball of tarballs) console.log(`  ${path.basename(tarball)}`)
  console.log("\nInstall them, with their peer dependencies, in your app:\n")
  console.log(`npm install ${destination}/*.tgz ${[...peers].map(([peer, range]) => `${peer}@${range}`).join(" ")}`)
}
