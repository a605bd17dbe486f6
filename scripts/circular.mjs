// `npm run circular`: fails when a module of a package's src reaches itself again through runtime imports.
// Type-only imports (`import type`) are skipped: they are erased, so they cannot form a cycle at run time.
import madge from "madge"
import * as fs from "node:fs"
import * as path from "node:path"

const root = path.resolve(import.meta.dirname, "..")
const sources = fs.readdirSync(path.join(root, "packages"))
  .map((name) => path.join(root, "packages", name, "src"))
  .filter((dir) => fs.existsSync(dir))

const result = await madge(sources, {
  baseDir: root,
  fileExtensions: ["ts"],
  // another package's import reaches its built types (dist/): only the sources are checked
  excludeRegExp: [/(^|\/)(dist|node_modules)\//],
  detectiveOptions: { ts: { skipTypeImports: true } }
})
const circles = result.circular()
if (circles.length > 0) {
  console.error(`${circles.length} circular import(s) between runtime modules:`)
  for (const circle of circles) console.error(`  ${[...circle, circle[0]].join(" -> ")}`)
  process.exit(1)
}
console.log(`no circular imports between the ${Object.keys(result.obj()).length} modules of packages/*/src`)
