/**
 * Every TypeScript code block of every README compiles, as a user's module in
 * a strict app: each ```ts block becomes a file of its own and one TypeScript
 * program checks them all with a strict consumer's settings (`skipLibCheck:
 * false`, NodeNext), in a worker thread. `@sessionflow/*` resolves to the workspace packages'
 * published types (`dist/*.d.ts`, built by `npm run build` and by the `tsc -b`
 * that `npm test` starts with), the other imports to the repository's
 * node_modules. A block that is a fragment, not a module, is fenced
 * ```ts no-check and is not compiled. A block fenced ```ts dom is compiled with
 * the DOM library added (`lib: ["ES2022", "DOM"]`): the declarations of
 * `@effect/rpc`, under `@effect/cluster`, name DOM's `Transferable`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Init } from "@sessionflow/cli"
import * as fs from "node:fs"
import * as path from "node:path"
import { Worker } from "node:worker_threads"

const root = path.resolve(import.meta.dirname, "../..")

/** The root README and every workspace's. */
const readmes = [
  "README.md",
  ...(JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).workspaces as ReadonlyArray<string>)
    .map((dir) => `${dir}/README.md`)
    .filter((file) => fs.existsSync(path.join(root, file)))
]

interface Block {
  readonly readme: string
  /** The README line of the block's first line of code (1-based). */
  readonly line: number
  readonly code: string
  readonly checked: boolean
  readonly dom: boolean
}

const blocks = (readme: string): ReadonlyArray<Block> => {
  const lines = fs.readFileSync(path.join(root, readme), "utf8").split("\n")
  const found: Array<Block> = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(ts|typescript)(\s.*)?$/.exec(lines[i]!)
    if (open === null) continue
    const end = lines.findIndex((l, j) => j > i && l.startsWith("```"))
    if (end < 0) throw new Error(`${readme}:${i + 1}: a code block that is never closed`)
    const words = (open[2] ?? "").trim().split(/\s+/)
    found.push({
      readme,
      line: i + 2,
      code: lines.slice(i + 1, end).join("\n") + "\n",
      checked: !words.includes("no-check"),
      dom: words.includes("dom")
    })
    i = end
  }
  return found
}

/** What a user compiles with: the strict settings of the app `sessionflow init` writes (each block a module). */
const options = { ...Init.tsconfig.compilerOptions, moduleDetection: "force" }

/** The same, with the DOM library (for the blocks fenced ```ts dom). */
const domOptions = { ...options, lib: [...Init.tsconfig.compilerOptions.lib, "DOM"] }

interface Diagnostic {
  readonly file?: string
  readonly line?: number
  readonly column?: number
  readonly code: number
  readonly message: string
}

/** The diagnostics of one TypeScript program over `files`. */
const check = (files: ReadonlyArray<string>, options: object): Promise<ReadonlyArray<Diagnostic>> =>
  new Promise((resolve, reject) => {
    const worker = new Worker(new URL("./compile.worker.mjs", import.meta.url), { workerData: { files, options } })
    worker.once("message", resolve)
    worker.once("error", reject)
    worker.once("exit", (code) => reject(new Error(`the compiler worker exited with ${code}`)))
  })

describe("README code blocks", () => {
  const all = readmes.flatMap(blocks)

  it("are few that are not compiled (fenced ```ts no-check)", () => {
    expect(all.length).toBeGreaterThan(20)
    expect(all.filter((b) => !b.checked).map((b) => `${b.readme}:${b.line}`).length).toBeLessThanOrEqual(5)
  })

  it("compile as modules of a strict app (skipLibCheck: false)", async () => {
    // inside the repository, so that its node_modules resolve the imports; an ESM package scope for NodeNext
    fs.mkdirSync(path.join(root, "tmp"), { recursive: true })
    const dir = fs.mkdtempSync(path.join(root, "tmp", "readme-blocks-"))
    try {
      fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module" }))
      const files = new Map<string, Block>()
      for (const block of all.filter((b) => b.checked)) {
        const file = path.join(dir, `${block.readme.replace(/[/.]/g, "_")}_${block.line}.ts`)
        fs.writeFileSync(file, block.code)
        files.set(file, block)
      }
      const [plain, dom] = [false, true].map((withDom) =>
        [...files].filter(([, b]) => b.dom === withDom).map(([file]) => file)
      )
      const diagnostics = [...await check(plain!, options), ...(dom!.length === 0 ? [] : await check(dom!, domOptions))]
      const errors = diagnostics.map((d) => {
        if (d.file === undefined) return `TS${d.code}: ${d.message}`
        const block = files.get(path.resolve(d.file))
        const where = block === undefined
          ? `${path.relative(root, d.file)}:${d.line}:${d.column}`
          : `${block.readme}:${block.line + d.line! - 1}:${d.column}`
        return `${where} TS${d.code}: ${d.message}`
      })
      expect(errors).toEqual([])
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }, 300_000)
})
