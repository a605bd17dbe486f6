/**
 * The session browser: one HTML page and the page's script, compiled from
 * `src/browser/` to `dist/browser/` by the build (plain ES modules: no
 * bundler, nothing compiled at run time).
 *
 * @internal
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { fileURLToPath } from "node:url"

/**
 * Where the build puts the page's script: `dist/browser/` of this package (from `src/internal/` or `dist/internal/`).
 */
const assetsDir = fileURLToPath(new URL("../../dist/browser/", import.meta.url))

const escapeHtml = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

const style = `
:root { --fg: #1d232a; --muted: #5d6b78; --line: #d9dee3; --accent: #2f6fdf; --bg: #f6f7f9; --ok: #1d7a45;
  --bad: #b3261e; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; gap: 1rem; align-items: center; padding: .6rem 1rem; background: #fff;
  border-bottom: 1px solid var(--line); }
header h1 { font-size: 1.05rem; margin: 0; }
header .spacer { flex: 1; }
header a { color: var(--accent); }
main { display: grid; grid-template-columns: 18rem 1fr; gap: 1rem; padding: 1rem; }
aside, section.panel { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: .75rem; }
aside select, aside button, input, textarea, form button { font: inherit; }
aside select { width: 100%; margin-bottom: .5rem; }
#sessions { list-style: none; padding: 0; margin: .5rem 0 0; }
#sessions li button { width: 100%; text-align: left; border: 1px solid transparent; background: none;
  padding: .35rem .4rem; border-radius: 4px; cursor: pointer; }
#sessions li button:hover { background: var(--bg); }
#sessions li button[aria-current="true"] { border-color: var(--accent); background: #eef3fd; }
#sessions .meta, .muted { color: var(--muted); font-size: .85em; }
#detail { display: grid; gap: 1rem; }
h2 { font-size: 1rem; margin: 0; }
h3 { font-size: .9rem; margin: 0 0 .5rem; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
.tree, .tree details { font-family: ui-monospace, monospace; font-size: 13px; }
.tree details { margin-left: 1rem; }
.tree summary { cursor: pointer; }
.tree .leaf { margin-left: 1rem; }
.tree .key { color: #7a3e9d; }
.tree .string { color: var(--ok); }
.tree .number, .tree .boolean, .tree .null { color: #b35c00; }
form#run { display: flex; gap: .5rem; align-items: flex-start; }
form#run textarea { flex: 1; min-height: 2.6rem; }
#events { font-family: ui-monospace, monospace; font-size: 12.5px; max-height: 24rem; overflow: auto;
  padding-left: 2.5rem; margin: .5rem 0 0; }
#events li[data-tag="RunCompleted"] { color: var(--ok); font-weight: 600; }
#events li[data-tag="RunFailed"], #events li[data-tag="StepFailed"], #events li[data-tag="RunCancelled"] {
  color: var(--bad); font-weight: 600; }
#events li[data-tag="StateChanged"] { color: #7a3e9d; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
td, th { text-align: left; padding: .25rem .4rem; border-bottom: 1px solid var(--line); vertical-align: top; }
td.status-completed { color: var(--ok); }
td.status-error, td.status-cancelled, td.status-abandoned { color: var(--bad); }
td.status-running { font-style: italic; }
td.state-running { font-style: italic; }
td.state-paused, td.state-waiting { color: #b35c00; }
td.state-sleeping { color: #4a5fa8; }
td .detail { display: block; color: var(--muted); font-size: .85em; }
.runs-head { display: flex; gap: .5rem; align-items: baseline; justify-content: space-between; }
#error { color: var(--bad); white-space: pre-wrap; }
#events li[data-tag="RunPaused"] { color: #b35c00; font-weight: 600; }
#events li.separator { list-style: none; color: var(--muted); }
#paused { list-style: none; padding: 0; margin: 0; display: grid; gap: .75rem; }
#paused li { border: 1px solid #f0c36d; background: #fffaf0; border-radius: 6px; padding: .6rem; }
#paused .question { font-weight: 600; }
#paused li[data-state] { border-color: var(--line); background: #f6f8fc; }
#paused .payload { margin: .4rem 0; }
#paused .actions { display: flex; gap: .5rem; align-items: center; }
#paused button.approve { color: #fff; background: var(--ok); border: 0; border-radius: 4px; padding: .3rem .8rem; }
#paused button.reject { color: #fff; background: var(--bad); border: 0; border-radius: 4px; padding: .3rem .8rem; }
#paused textarea { width: 100%; min-height: 3rem; font-family: ui-monospace, monospace; }
#graph { overflow: auto; }
#graph ol.seq { list-style: none; margin: 0; padding: 0; display: flex; flex-direction: column;
  align-items: flex-start; gap: .9rem; }
#graph li.node { position: relative; }
#graph ol.seq > li.node + li.node::before { content: ""; position: absolute; top: -.9rem; left: 1.2rem; height: .9rem;
  border-left: 2px solid var(--line); }
#graph li.node > .box { display: inline-flex; gap: .4rem; align-items: baseline; border: 1px solid var(--line);
  border-radius: 6px; padding: .25rem .55rem; background: #fff; }
#graph li.node:focus { outline: none; }
#graph li.node:focus > .box { outline: 2px solid var(--accent); outline-offset: 2px; }
#graph .kind { font-size: .75em; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
#graph .name { font-weight: 600; }
#graph .status { font-size: .8em; color: var(--muted); }
#graph .repeat { color: var(--accent); }
#graph li.node[data-kind="condition"] > .box, #graph li.node[data-kind="router"] > .box { border-style: dashed; }
#graph li.node > ol.seq, #graph li.node > .branches { margin: .5rem 0 0 1.2rem; padding: .5rem;
  border: 1px dashed var(--line); border-radius: 6px; }
#graph li.node[data-kind="loop"] > ol.seq { border-color: var(--accent); }
#graph .branches { display: flex; gap: .8rem; align-items: flex-start; }
#graph .branch-label { font-size: .75em; color: var(--muted); margin-bottom: .3rem; }
#graph li.node[data-status="running"] > .box { border-color: #b35c00; background: #fff6e8; }
#graph li.node[data-status="completed"] > .box { border-color: var(--ok); background: #eefaf2; }
#graph li.node[data-status="failed"] > .box { border-color: var(--bad); background: #fdeeee; }
#graph li.node[data-status="paused"] > .box { border-color: #b35c00; border-style: double; }
#input-fields { flex: 1; display: grid; grid-template-columns: max-content 1fr; gap: .35rem .6rem;
  align-items: center; }
#input-fields .field { display: contents; }
#timeline td.step { font-weight: 600; }
#timeline tr[data-status="failed"] td.status { color: var(--bad); }
#timeline tr[data-status="completed"] td.status { color: var(--ok); }
#versions-panel .compare { display: flex; gap: .6rem; align-items: center; margin: .6rem 0; }
#versions-panel td.actions { display: flex; gap: .4rem; }
#version-view ul.diff { list-style: none; margin: 0; padding: 0; }
#version-view li.op-added { color: var(--ok); }
#version-view li.op-removed { color: var(--bad); }
#version-view li.op-changed { color: #b35c00; }
#timeline ul.diff { list-style: none; margin: 0; padding: 0; font-family: ui-monospace, monospace; font-size: 12px;
  color: #7a3e9d; }
`

const html = (prefix: string, scriptAvailable: boolean) =>
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="sessionflow-base" content="${escapeHtml(prefix)}">
<link rel="icon" type="image/svg+xml" href="${escapeHtml(prefix)}/favicon.svg">
<title>sessionflow · sessions</title>
<style>${style}</style>
</head>
<body>
<header>
  <h1>sessionflow · sessions</h1>
  <span class="spacer"></span>
  <label>Token <input id="token" type="password" autocomplete="off" placeholder="bearer token (optional)"></label>
  <a href="${escapeHtml(prefix)}/docs">API docs</a>
</header>
<main>
  <aside>
    <label for="workflow" class="muted">Workflow</label>
    <select id="workflow"></select>
    <p id="workflow-description" class="muted"></p>
    <button id="new-session" type="button">New session</button>
    <ul id="sessions"></ul>
  </aside>
  <div id="detail">
    <section class="panel">
      <h2 id="session-title">New session</h2>
      <p id="error" role="alert"></p>
    </section>
    <section class="panel" id="paused-panel" hidden>
      <h3>Waiting for a response, a signal or a time</h3>
      <ul id="paused"></ul>
    </section>
    <section class="panel">
      <h3>Steps</h3>
      <div id="graph"><span class="muted">No workflow selected.</span></div>
    </section>
    <section class="panel">
      <h3>Run</h3>
      <form id="run">
        <div id="input-fields" hidden></div>
        <textarea id="input" name="input" aria-label="Run input"
          placeholder="Input for the workflow (text, or JSON for a structured input)"></textarea>
        <button id="send" type="submit">Run</button>
      </form>
      <ol id="events"></ol>
    </section>
    <section class="panel">
      <h3>Timeline</h3>
      <p id="timeline-title" class="muted">No run shown yet.</p>
      <table>
        <thead><tr>
          <th>step</th><th>kind</th><th>status</th><th>duration</th><th>output</th><th>state changes</th>
        </tr></thead>
        <tbody id="timeline"></tbody>
      </table>
    </section>
    <section class="panel">
      <h3>State</h3>
      <div id="state" class="tree"><span class="muted">No session selected.</span></div>
    </section>
    <section class="panel">
      <div class="runs-head"><h3>Run history</h3><button id="refresh-runs" type="button">Refresh runs</button></div>
      <table>
        <thead><tr>
          <th>run</th><th>status</th><th>input</th><th>output</th><th>tokens</th><th>finished</th><th></th>
        </tr></thead>
        <tbody id="runs"></tbody>
      </table>
      <div id="queued-panel" hidden>
        <h3>Queued</h3>
        <table>
          <thead><tr><th>run</th><th>status</th><th>input</th><th>queued</th></tr></thead>
          <tbody id="queued"></tbody>
        </table>
      </div>
      <div id="schedules-panel" hidden>
        <h3>Scheduled</h3>
        <table>
          <thead><tr><th>schedule</th><th>cron</th><th>next tick</th><th>last fired</th></tr></thead>
          <tbody id="schedules"></tbody>
        </table>
      </div>
    </section>
    <section class="panel" id="versions-panel">
      <h3>Versions</h3>
      <table>
        <thead><tr><th>version</th><th>committed</th><th>run</th><th>changed</th><th></th></tr></thead>
        <tbody id="versions"></tbody>
      </table>
      <div class="compare">
        <label>From <select id="diff-from"></select></label>
        <label>to <select id="diff-to"></select></label>
        <button id="compare" type="button">Compare</button>
      </div>
      <p id="version-title" class="muted" aria-live="polite">Pick a version to see its state, or two to compare.</p>
      <div id="version-view" class="tree"></div>
    </section>
  </div>
</main>
${
    scriptAvailable
      ? `<script type="module" src="${escapeHtml(prefix)}/assets/app.js"></script>`
      : `<p style="padding:1rem">The page's script is not built: run <code>npm run build</code>.</p>`
  }
</body>
</html>
`

/** The page's icon: three steps, two of them side by side after the first. */
const favicon = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<rect width="32" height="32" rx="7" fill="#2f6fdf"/>
<path d="M16 11v4M16 15l-7 5M16 15l7 5" stroke="#fff" stroke-width="2.2" fill="none" stroke-linecap="round"/>
<rect x="11" y="4" width="10" height="7" rx="2" fill="#fff"/>
<rect x="4" y="20" width="10" height="7" rx="2" fill="#fff"/>
<rect x="18" y="20" width="10" height="7" rx="2" fill="#fff"/>
</svg>
`

/** The compiled modules of the page, read once when the server starts. */
const readAssets = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const names = yield* fs.readDirectory(assetsDir).pipe(Effect.orElseSucceed(() => [] as Array<string>))
  const assets = new Map<string, string>()
  for (const name of names.filter((n) => /^[\w-]+\.js$/.test(n))) {
    assets.set(name, yield* fs.readFileString(`${assetsDir}${name}`))
  }
  return assets
})

/**
 * The page at `${prefix}/`, its modules at `${prefix}/assets/<name>.js` and
 * its icon at `${prefix}/favicon.svg`.
 *
 * @internal
 */
export const layer = (
  prefix: "" | `/${string}`
): Layer.Layer<never, never, HttpLayerRouter.HttpRouter | FileSystem.FileSystem> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const router = yield* HttpLayerRouter.HttpRouter
    const assets = yield* readAssets.pipe(Effect.orElseSucceed(() => new Map<string, string>()))
    const page = HttpServerResponse.text(html(prefix, assets.has("app.js")), {
      contentType: "text/html; charset=utf-8",
      headers: { "cache-control": "no-cache" }
    })
    const at = (suffix: `/${string}`): `/${string}` => prefix === "" ? suffix : `${prefix}${suffix}`
    yield* router.add("GET", at("/"), Effect.succeed(page))
    const icon = HttpServerResponse.text(favicon, {
      contentType: "image/svg+xml",
      headers: { "cache-control": "public, max-age=86400" }
    })
    yield* router.add("GET", at("/favicon.svg"), Effect.succeed(icon))
    yield* router.add("GET", at("/assets/:file"), (request) =>
      Effect.sync(() => {
        const name = new URL(request.url, "http://localhost").pathname.split("/").pop() ?? ""
        const source = assets.get(name)
        return source === undefined
          ? HttpServerResponse.empty({ status: 404 })
          : HttpServerResponse.text(source, {
            contentType: "text/javascript; charset=utf-8",
            headers: { "cache-control": "no-cache" }
          })
      }))
  }))
