/**
 * The session browser: pick a workflow, see its step tree as a graph, list
 * its sessions, look at a session's state (a collapsible tree) and run
 * history, and run the workflow with an input (a form built from its input
 * Schema) while its events arrive (server-sent events) and its timeline fills
 * in (each step's duration, output and state changes, marked on the graph);
 * a past run's timeline is replayed from its stored events. A run that
 * pauses for a person shows its question with Approve / Reject (the answer an
 * agent's tool approval takes) and a free JSON response; answering continues
 * the run, its events arriving the same way. A session's kept versions are
 * listed (when, by which run, the keys each changed): the state at one, the
 * differences between two, and a fork of the session from one (or from a
 * paused run's point); each run shows the tokens its model calls used.
 */
import { fieldsOf, renderFields } from "./form.js"
import { clearMarks, type Graph, renderGraph, type StepNode } from "./graph.js"
import { readEvents } from "./sse.js"
import { describeChange, preview, Timeline } from "./timeline.js"
import { renderTree } from "./tree.js"
import { diff, renderDiff, renderVersions, type VersionInfo } from "./versions.js"

interface WorkflowInfo {
  readonly id: string
  readonly name: string
  readonly description?: string
  readonly input?: { readonly type?: string }
}

interface SessionInfo {
  readonly sessionId: string
  readonly name?: string
  readonly userId?: string
  readonly version: number
  readonly updatedAt: number
}

/** What an unfinished run waits for (absent on an ended run). */
interface Waits {
  readonly state?: "running" | "paused" | "sleeping" | "waiting"
  readonly wakeAt?: number
  readonly signal?: string
  readonly timeoutAt?: number
}

/**
 * A run of the session as `GET …/runs?sessionId=` lists it: unfinished (its
 * `state`: running, paused, sleeping or waiting) or ended.
 */
interface RunRecord extends Waits {
  readonly runId: string
  readonly status: string
  readonly pause?: { readonly path: ReadonlyArray<string>; readonly pausedAt: number }
  readonly input: unknown
  readonly content?: unknown
  readonly error?: string
  readonly usage?: {
    readonly inputTokens: number
    readonly outputTokens: number
    readonly totalTokens: number
    readonly modelCalls: number
  }
  readonly completedAt?: number
}

/** A run in the session's queue (`onBusy: "enqueue"`): `running` (its turn) or `waiting`, in arrival order. */
interface QueuedRun {
  readonly runId: string
  readonly status: string
  readonly input: unknown
  readonly ticket: number
  readonly enqueuedAt: number
}

/** A schedule of the workflow (see `Schedules.layer`): its cron (UTC), next tick and last fired tick. */
interface ScheduleInfo {
  readonly name: string
  readonly cron: string
  readonly nextTick: number
  readonly lastFiredAt?: number
}

interface PausedRun extends Waits {
  readonly runId: string
  readonly sessionId: string
  readonly pause: string
  readonly userId?: string
  readonly input: unknown
  readonly path: ReadonlyArray<string>
  readonly payload: unknown
  readonly pausedAt: number
}

type Event =
  & {
    readonly _tag: string
    readonly runId: string
    readonly sessionId: string
    readonly path: ReadonlyArray<string>
    readonly timestamp: number
  }
  & Record<string, any>

const base = document.querySelector<HTMLMetaElement>("meta[name=\"sessionflow-base\"]")?.content ?? ""
const byId = <T extends HTMLElement>(id: string) => document.getElementById(id) as T

const ui = {
  token: byId<HTMLInputElement>("token"),
  workflow: byId<HTMLSelectElement>("workflow"),
  description: byId<HTMLParagraphElement>("workflow-description"),
  newSession: byId<HTMLButtonElement>("new-session"),
  sessions: byId<HTMLUListElement>("sessions"),
  title: byId<HTMLHeadingElement>("session-title"),
  error: byId<HTMLParagraphElement>("error"),
  form: byId<HTMLFormElement>("run"),
  input: byId<HTMLTextAreaElement>("input"),
  fields: byId<HTMLDivElement>("input-fields"),
  graph: byId<HTMLDivElement>("graph"),
  timeline: byId<HTMLTableSectionElement>("timeline"),
  timelineTitle: byId<HTMLParagraphElement>("timeline-title"),
  send: byId<HTMLButtonElement>("send"),
  events: byId<HTMLOListElement>("events"),
  state: byId<HTMLDivElement>("state"),
  runs: byId<HTMLTableSectionElement>("runs"),
  refreshRuns: byId<HTMLButtonElement>("refresh-runs"),
  queuedPanel: byId<HTMLDivElement>("queued-panel"),
  queued: byId<HTMLTableSectionElement>("queued"),
  schedulesPanel: byId<HTMLDivElement>("schedules-panel"),
  schedules: byId<HTMLTableSectionElement>("schedules"),
  pausedPanel: byId<HTMLElement>("paused-panel"),
  paused: byId<HTMLUListElement>("paused"),
  versions: byId<HTMLTableSectionElement>("versions"),
  diffFrom: byId<HTMLSelectElement>("diff-from"),
  diffTo: byId<HTMLSelectElement>("diff-to"),
  compare: byId<HTMLButtonElement>("compare"),
  versionTitle: byId<HTMLParagraphElement>("version-title"),
  versionView: byId<HTMLDivElement>("version-view")
}

let workflows: ReadonlyArray<WorkflowInfo> = []
let selected: string | undefined
let graph: Graph | undefined
/** reads the input form's fields, when the workflow's input Schema is an object of simple fields */
let readFields: (() => Record<string, unknown>) | undefined
const timeline = new Timeline(ui.timeline, () => graph)

// the token lives in the field only: never in storage another script of the origin could read later
localStorage.removeItem("sessionflow-token")
ui.token.addEventListener("change", () => {
  // a server that requires a token lists its workflows only once one is typed
  void (workflows.length === 0 ? loadWorkflows().then(refresh, (error: Error) => showError(error.message)) : refresh())
})

const headers = (extra: Record<string, string> = {}): Record<string, string> =>
  ui.token.value.trim() === "" ? extra : { ...extra, authorization: `Bearer ${ui.token.value.trim()}` }

const workflowPath = () => `${base}/workflows/${encodeURIComponent(ui.workflow.value)}`

const showError = (message: string) => {
  ui.error.textContent = message
}

/** A JSON request; a failure's message (the API's `message`) is thrown. */
const api = async <A>(path: string, init: RequestInit = {}): Promise<A> => {
  const response = await fetch(path, { ...init, headers: headers(init.headers as Record<string, string> | undefined) })
  const text = await response.text()
  const body = text === "" ? undefined : JSON.parse(text)
  if (!response.ok) throw new Error(body?.message ?? `${response.status} ${response.statusText}`)
  return body as A
}

const time = (millis: number) => new Date(millis).toLocaleString()

// -----------------------------------------------------------------------------
// workflows and sessions
// -----------------------------------------------------------------------------

const loadWorkflows = async () => {
  workflows = await api<ReadonlyArray<WorkflowInfo>>(`${base}/workflows`)
  ui.workflow.replaceChildren(...workflows.map((w) => new Option(w.name, w.id)))
  const wanted = new URLSearchParams(location.search).get("workflow")
  const found = workflows.find((w) => w.id === wanted || w.name === wanted)
  if (found !== undefined) ui.workflow.value = found.id
}

const renderSessions = (sessions: ReadonlyArray<SessionInfo>) => {
  ui.sessions.replaceChildren(...sessions.map((s) => {
    const item = document.createElement("li")
    const button = document.createElement("button")
    button.type = "button"
    button.dataset["sessionId"] = s.sessionId
    button.setAttribute("aria-current", String(s.sessionId === selected))
    const title = document.createElement("div")
    title.textContent = s.name ?? s.sessionId
    const meta = document.createElement("div")
    meta.className = "meta"
    meta.textContent = `${s.name === undefined ? "" : `${s.sessionId} · `}v${s.version} · ${time(s.updatedAt)}${
      s.userId === undefined ? "" : ` · ${s.userId}`
    }`
    button.append(title, meta)
    button.addEventListener("click", () => void select(s.sessionId))
    item.append(button)
    return item
  }))
}

const loadSessions = async () => {
  const listing = await api<{ sessions: ReadonlyArray<SessionInfo> }>(`${workflowPath()}/sessions`)
  renderSessions(listing.sessions)
}

/** A `<time>` of epoch milliseconds, with its machine-readable form. */
const timeOf = (millis: number, className: string) =>
  Object.assign(document.createElement("time"), {
    className,
    dateTime: new Date(millis).toISOString(),
    textContent: time(millis)
  })

/** What an unfinished run waits for, in words: until when it sleeps, the signal it waits for, the question it asks. */
const stateDetail = (
  run: Waits & { readonly pause?: { readonly path: ReadonlyArray<string> } }
): ReadonlyArray<Node | string> => {
  const timeout = run.timeoutAt === undefined ? [] : [" · times out ", timeOf(run.timeoutAt, "timeout-at")]
  switch (run.state) {
    case "sleeping":
      return run.wakeAt === undefined ? [] : ["until ", timeOf(run.wakeAt, "wake-at")]
    case "waiting":
      return [
        "for signal ",
        Object.assign(document.createElement("code"), { className: "signal", textContent: run.signal ?? "?" }),
        ...timeout
      ]
    case "paused":
      return [`question at ${run.pause?.path.join(" › ") ?? "?"}`, ...timeout]
    default:
      return []
  }
}

/** The status cell of a run: an unfinished run's state (with what it waits for), else its status. */
const statusCell = (run: RunRecord) => {
  const cell = document.createElement("td")
  cell.className = run.state === undefined ? `status-${run.status}` : `status-${run.status} state-${run.state}`
  cell.append(run.state ?? run.status)
  const detail = stateDetail(run)
  if (detail.length > 0) {
    const span = Object.assign(document.createElement("span"), { className: "detail" })
    span.append(...detail)
    cell.append(span)
  }
  return cell
}

/**
 * The session's runs, most recently started first: an unfinished one (in the
 * background too) shows its state — running, paused, sleeping, waiting — until
 * it ends.
 */
const renderRuns = (page: { readonly runs: ReadonlyArray<RunRecord> }) => {
  ui.runs.replaceChildren(...page.runs.map((run) => {
    const row = document.createElement("tr")
    const tokens = run.usage === undefined ? "—" : String(run.usage.totalTokens)
    const cells = [
      run.runId.slice(0, 8),
      "",
      preview(run.input),
      run.error ?? preview(run.content),
      tokens,
      run.completedAt === undefined ? "" : time(run.completedAt)
    ]
    row.dataset["runId"] = run.runId
    if (run.state !== undefined) row.dataset["state"] = run.state
    row.append(...cells.map((text, i) => {
      if (i === 1) return statusCell(run)
      const cell = document.createElement("td")
      cell.textContent = text
      if (i === 4) {
        cell.className = "tokens"
        if (run.usage !== undefined) {
          const { inputTokens, modelCalls, outputTokens } = run.usage
          cell.title = `${inputTokens} in, ${outputTokens} out, ${modelCalls} model call${modelCalls === 1 ? "" : "s"}`
        }
      }
      return cell
    }))
    const show = document.createElement("td")
    show.append(button("Timeline", "show-timeline", () => void replay(run.runId)))
    row.append(show)
    return row
  }))
}

// -----------------------------------------------------------------------------
// the selected session, live: what any client commits to it (on any server over
// the same store) shows here as it lands
// -----------------------------------------------------------------------------

let watched: { readonly sessionId: string; readonly controller: AbortController } | undefined
/** The version of the selected session that the state tree shows. */
let shownVersion = 0

const stopWatching = () => {
  watched?.controller.abort()
  watched = undefined
  delete document.body.dataset["watching"]
}

/** Follows the selected session's committed versions (`…/watch`), re-rendering its state and history. */
const watchSelected = (sessionId: string) => {
  if (watched?.sessionId === sessionId) return
  stopWatching()
  const controller = new AbortController()
  watched = { sessionId, controller }
  const path = `${workflowPath()}/sessions/${encodeURIComponent(sessionId)}`
  void (async () => {
    try {
      const response = await fetch(`${path}/watch`, {
        headers: headers({ accept: "text/event-stream" }),
        signal: controller.signal
      })
      if (!response.ok || response.body === null) return
      document.body.dataset["watching"] = sessionId
      await readEvents(response.body, ({ data, event }) => {
        if (event !== "SessionUpdate" || selected !== sessionId) return
        const update = JSON.parse(data) as { readonly version: number; readonly state: unknown }
        if (update.version <= shownVersion) return
        shownVersion = update.version
        ui.state.replaceChildren(renderTree(update.state))
        void loadRuns(sessionId).then((render) => render(), () => {})
        void loadVersions(sessionId).catch(() => {})
      })
    } catch {
      // aborted, or the server went away: the page works on without live updates
    }
  })()
}

/** The runs of a session, unfinished ones too (the session's own history lists the ended ones only). */
const runsOf = (sessionId: string) => `${workflowPath()}/runs?sessionId=${encodeURIComponent(sessionId)}`

/**
 * The runs waiting in the session's queue, in arrival order (hidden when there
 * are none): each with its place, how many runs are ahead of it.
 */
const renderQueued = (runs: ReadonlyArray<QueuedRun>) => {
  ui.queuedPanel.hidden = runs.length === 0
  ui.queued.replaceChildren(...runs.map((run, position) => {
    const row = document.createElement("tr")
    row.dataset["runId"] = run.runId
    row.dataset["status"] = run.status
    row.dataset["position"] = String(position)
    const place = position === 0 ? "first" : `${position} ahead`
    const cells = [run.runId.slice(0, 8), `${run.status} · ${place}`, preview(run.input)].map((text) =>
      Object.assign(document.createElement("td"), { textContent: text })
    )
    const queued = document.createElement("td")
    queued.append(timeOf(run.enqueuedAt, "enqueued-at"))
    row.append(...cells, queued)
    return row
  }))
}

/** The workflow's schedules, by name (hidden when it has none). */
const renderSchedules = (schedules: ReadonlyArray<ScheduleInfo>) => {
  ui.schedulesPanel.hidden = schedules.length === 0
  ui.schedules.replaceChildren(...schedules.map((schedule) => {
    const row = document.createElement("tr")
    row.dataset["schedule"] = schedule.name
    const cells = [schedule.name, schedule.cron].map((text) =>
      Object.assign(document.createElement("td"), { textContent: text })
    )
    const next = document.createElement("td")
    next.append(timeOf(schedule.nextTick, "next-tick"))
    const last = document.createElement("td")
    last.append(schedule.lastFiredAt === undefined ? muted("—") : timeOf(schedule.lastFiredAt, "last-fired"))
    row.append(...cells, next, last)
    return row
  }))
}

/** The selected workflow's schedules (none shown when they cannot be read). */
const loadSchedules = async () => {
  const workflow = ui.workflow.value
  const schedules = await api<ReadonlyArray<ScheduleInfo>>(`${workflowPath()}/schedules`).catch((): ReadonlyArray<
    ScheduleInfo
  > => [])
  if (ui.workflow.value === workflow) renderSchedules(schedules)
}

const clearRuns = () => {
  ui.runs.replaceChildren()
  renderQueued([])
}

/** The session's runs and its queue, read together. */
const loadRuns = async (sessionId: string) => {
  const [runs, queued] = await Promise.all([
    api<{ runs: ReadonlyArray<RunRecord> }>(runsOf(sessionId)),
    api<ReadonlyArray<QueuedRun>>(`${workflowPath()}/runs/queued?sessionId=${encodeURIComponent(sessionId)}`)
      .catch((): ReadonlyArray<QueuedRun> => [])
  ])
  return () => {
    renderRuns(runs)
    renderQueued(queued)
  }
}

const muted = (text: string) => Object.assign(document.createElement("span"), { className: "muted", textContent: text })

// -----------------------------------------------------------------------------
// versions: the state at each kept one, the differences between two, forks
// -----------------------------------------------------------------------------

const sessionPath = (sessionId: string) => `${workflowPath()}/sessions/${encodeURIComponent(sessionId)}`

const clearVersions = () => {
  ui.versions.replaceChildren()
  ui.diffFrom.replaceChildren()
  ui.diffTo.replaceChildren()
  ui.versionView.replaceChildren()
  ui.versionTitle.textContent = "Pick a version to see its state, or two to compare."
}

const loadVersions = async (sessionId: string) => {
  const versions = await api<ReadonlyArray<VersionInfo>>(`${sessionPath(sessionId)}/versions`)
  if (selected !== sessionId) return
  renderVersions(ui.versions, [ui.diffFrom, ui.diffTo], versions, {
    show: showVersion,
    fork: (v) => void fork({ atVersion: v })
  }, time)
  if (versions.length === 0) ui.versionTitle.textContent = "This session keeps no versions."
}

const stateAt = (sessionId: string, version: number) =>
  api<{ readonly state: unknown }>(`${sessionPath(sessionId)}/versions/${version}`).then((found) => found.state)

const showVersion = (version: number) => {
  const sessionId = selected
  if (sessionId === undefined) return
  void stateAt(sessionId, version).then((state) => {
    ui.versionTitle.textContent = `State at version ${version}`
    ui.versionView.replaceChildren(renderTree(state))
    ui.versionView.dataset["shows"] = `v${version}`
  }, (error: Error) => showError(error.message))
}

ui.compare.addEventListener("click", () => {
  const sessionId = selected
  const [from, to] = [Number(ui.diffFrom.value), Number(ui.diffTo.value)]
  if (sessionId === undefined || !(from > 0) || !(to > 0)) return
  void Promise.all([stateAt(sessionId, from), stateAt(sessionId, to)]).then(([before, after]) => {
    ui.versionTitle.textContent = `From version ${from} to version ${to}`
    ui.versionView.replaceChildren(renderDiff(diff(before, after)))
    ui.versionView.dataset["shows"] = `v${from}..v${to}`
  }, (error: Error) => showError(error.message))
})

/** Forks the selected session (at a version, or at a paused run's point) and selects the fork. */
const fork = async (request: { readonly atVersion?: number; readonly atRun?: string }) => {
  const sessionId = selected
  if (sessionId === undefined) return
  try {
    showError("")
    const forked = await api<{ readonly sessionId: string; readonly version: number }>(
      `${sessionPath(sessionId)}/fork`,
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(request)
      }
    )
    await loadSessions()
    await select(forked.sessionId)
    ui.versionTitle.textContent = `Forked from session ${sessionId} at version ${forked.version}`
  } catch (error) {
    showError(String((error as Error).message))
  }
}

const loadSession = async () => {
  await loadPaused()
  if (selected === undefined) {
    stopWatching()
    ui.title.textContent = "New session"
    ui.state.replaceChildren(muted("The next run starts a new session."))
    clearRuns()
    clearVersions()
    return
  }
  const path = `${workflowPath()}/sessions/${encodeURIComponent(selected)}`
  const response = await fetch(path, { headers: headers() })
  if (response.status === 404 && ui.paused.childElementCount > 0) {
    // a new session whose first run waits: it is stored when that run completes
    ui.title.textContent = `Session ${selected}`
    ui.state.replaceChildren(muted("Nothing stored yet: the session is created when its first run completes."))
    clearRuns()
    clearVersions()
    return
  }
  const [session, renderAllRuns] = await Promise.all([
    api<SessionInfo & { state: unknown }>(path),
    loadRuns(selected)
  ])
  ui.title.textContent = `Session ${session.name ?? session.sessionId}`
  if (session.version >= shownVersion || watched?.sessionId !== session.sessionId) {
    shownVersion = session.version
    ui.state.replaceChildren(renderTree(session.state))
    renderAllRuns()
  }
  if (ui.versionView.dataset["session"] !== session.sessionId) {
    clearVersions()
    ui.versionView.dataset["session"] = session.sessionId
  }
  await loadVersions(session.sessionId)
  watchSelected(session.sessionId)
}

// -----------------------------------------------------------------------------
// paused runs: their questions, and the answers that continue them
// -----------------------------------------------------------------------------

/** What a paused run asks, in words: an agent's tool call waiting for approval, or the step that asked. */
const question = (run: PausedRun): string => {
  const payload = run.payload as { agent?: unknown; tool?: unknown; arguments?: unknown } | null
  return payload !== null && typeof payload === "object" && typeof payload.tool === "string"
    ? `${typeof payload.agent === "string" ? payload.agent : "An agent"} wants to call ${payload.tool}(${
      preview(payload.arguments)
    })`
    : `${run.path.join(" › ")} asks:`
}

const button = (text: string, className: string, onClick: () => void) => {
  const node = Object.assign(document.createElement("button"), { type: "button", textContent: text, className })
  node.addEventListener("click", onClick)
  return node
}

const renderPaused = (runs: ReadonlyArray<PausedRun>) => {
  ui.pausedPanel.hidden = runs.length === 0
  ui.paused.replaceChildren(...runs.map((run) => {
    const item = document.createElement("li")
    item.dataset["runId"] = run.runId
    if (run.state === "sleeping" || run.state === "waiting") {
      // nothing to answer here: it wakes by itself, or when its signal is sent
      item.dataset["state"] = run.state
      const title = Object.assign(document.createElement("div"), {
        className: "question",
        textContent: `${run.path.join(" › ")} is ${run.state}`
      })
      const detail = Object.assign(document.createElement("div"), { className: "detail" })
      detail.append(...stateDetail({ ...run, pause: { path: run.path } }))
      const meta = muted(`run ${run.runId.slice(0, 8)} · session ${run.sessionId} · since ${time(run.pausedAt)}`)
      const actions = Object.assign(document.createElement("div"), { className: "actions" })
      actions.append(button("Timeline", "show-timeline", () => void replay(run.runId)))
      item.append(title, detail, meta, actions)
      return item
    }
    const title = Object.assign(document.createElement("div"), { className: "question", textContent: question(run) })
    const meta = muted(`run ${run.runId.slice(0, 8)} · session ${run.sessionId} · waiting since ${time(run.pausedAt)}`)
    const payload = Object.assign(renderTree(run.payload), { className: "tree payload" })
    const reason = Object.assign(document.createElement("input"), {
      className: "reason",
      placeholder: "reason (optional)"
    })
    const withReason = (approved: boolean) =>
      reason.value.trim() === "" ? { approved } : { approved, reason: reason.value.trim() }
    const actions = document.createElement("div")
    actions.className = "actions"
    actions.append(
      button("Approve", "approve", () => void answer(run, withReason(true))),
      button("Reject", "reject", () => void answer(run, withReason(false))),
      reason,
      button("Timeline", "show-timeline", () => void replay(run.runId)),
      // a copy of the session and of this run, waiting at the same question: answer it another way there
      button("Fork here", "fork-run", () => {
        void (async () => {
          if (selected !== run.sessionId) await select(run.sessionId)
          await fork({ atRun: run.runId })
        })()
      })
    )
    // any other question: a response in the pausing step's response Schema, as JSON
    const other = document.createElement("details")
    const json = Object.assign(document.createElement("textarea"), {
      className: "response",
      placeholder: "{ \"approved\": true }"
    })
    other.append(
      Object.assign(document.createElement("summary"), { textContent: "Other response (JSON)" }),
      json,
      button("Send response", "send-response", () => {
        try {
          void answer(run, JSON.parse(json.value))
        } catch (error) {
          showError(`The response is not JSON: ${(error as Error).message}`)
        }
      })
    )
    item.append(title, meta, payload, actions, other)
    return item
  }))
}

/** The paused runs of the selected session (of the workflow, for a new session). */
const loadPaused = async () => {
  const query = selected === undefined ? "" : `?sessionId=${encodeURIComponent(selected)}`
  renderPaused(await api<ReadonlyArray<PausedRun>>(`${workflowPath()}/runs/paused${query}`))
}

const select = async (sessionId: string | undefined) => {
  selected = sessionId
  for (const button of ui.sessions.querySelectorAll("button")) {
    button.setAttribute("aria-current", String(button.dataset["sessionId"] === sessionId))
  }
  try {
    showError("")
    await loadSession()
  } catch (error) {
    showError(String((error as Error).message))
  }
}

const refresh = async () => {
  try {
    showError("")
    const workflow = workflows.find((w) => w.id === ui.workflow.value)
    ui.description.textContent = workflow?.description ?? ""
    if (ui.graph.dataset["workflow"] !== ui.workflow.value) showWorkflow(workflow)
    await Promise.all([loadSessions(), loadSession(), loadGraph(), loadSchedules()])
  } catch (error) {
    showError(String((error as Error).message))
  }
}

ui.workflow.addEventListener("change", () => {
  selected = undefined
  ui.events.replaceChildren()
  void refresh()
})
ui.refreshRuns.addEventListener("click", () => {
  void loadSchedules()
  const sessionId = selected
  if (sessionId === undefined) return
  void loadRuns(sessionId).then((render) => {
    if (selected === sessionId) render()
  }, (error: Error) => showError(error.message))
})
ui.newSession.addEventListener("click", () => {
  ui.events.replaceChildren()
  void select(undefined)
})

// -----------------------------------------------------------------------------
// runs and their events
// -----------------------------------------------------------------------------

/** One line per event (text deltas of a step are joined on one line). */
const describeEvent = (event: Event): string => {
  const at = event.path.length === 0 ? "" : `[${event.path.join(" › ")}] `
  switch (event._tag) {
    case "RunStarted":
      return `▶ run started on session ${event.sessionId}`
    case "RunCompleted":
      return `✔ run completed: ${preview(event["content"])}`
    case "RunFailed":
      return `✖ run failed: ${event["error"]}`
    case "RunCancelled":
      return "✖ run cancelled"
    case "RunPaused":
      return `‖ run paused at ${(event["stepPath"] as ReadonlyArray<string>).join(" › ")}: waiting for a response ${
        preview(event["payload"])
      }`
    case "RunResumed":
      return `▶ run continued from step ${Number(event["fromStep"]) + 1}`
    case "StepStarted":
      return `${at}${event["kind"]} started`
    case "StepCompleted":
      return `${at}completed: ${preview(event["content"])}`
    case "StepFailed":
      return `${at}failed: ${event["error"]}`
    case "ToolCallStarted":
      return `${at}call ${event["toolName"]}(${preview(event["arguments"])})`
    case "ToolCallCompleted":
      return `${at}${event["toolName"]} → ${preview(event["result"])}`
    case "StateChanged":
      return `${at}state: ${
        (event["changes"] as ReadonlyArray<Parameters<typeof describeChange>[0]>).map(describeChange).join(", ")
      }`
    case "ConditionEvaluated":
      return `${at}condition: ${event["result"]} (${event["branch"]})`
    case "RouterSelected":
      return `${at}router selected ${(event["selected"] as ReadonlyArray<string>).join(", ")}`
    case "Log":
      return `${at}${event["message"]}`
    default:
      return `${at}${event._tag}`
  }
}

let lastDelta: { item: HTMLLIElement; path: string } | undefined

const showEvent = (event: Event) => {
  if (event._tag === "TextDelta") {
    const path = event.path.join("›")
    if (lastDelta?.path === path) {
      lastDelta.item.textContent += event["delta"]
      return
    }
  }
  const item = document.createElement("li")
  item.dataset["tag"] = event._tag
  item.textContent = event._tag === "TextDelta"
    ? `${event.path.length === 0 ? "" : `[${event.path.join(" › ")}] `}says: ${event["delta"]}`
    : describeEvent(event)
  lastDelta = event._tag === "TextDelta" ? { item, path: event.path.join("›") } : undefined
  ui.events.append(item)
  item.scrollIntoView({ block: "nearest" })
}

/** The input as the workflow takes it: text, or JSON when its input Schema is not a string. */
const runInput = (text: string): unknown => {
  if (readFields !== undefined) return readFields()
  const schema = workflows.find((w) => w.id === ui.workflow.value)?.input
  if (schema === undefined || schema.type === "string") return text
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/**
 * Posts `body` to `url` asking for server-sent events and shows each event as
 * it arrives; then reloads the sessions and the selected session.
 */
const streamEvents = async (url: string, body: unknown) => {
  showError("")
  lastDelta = undefined
  ui.send.disabled = true
  document.body.dataset["running"] = "true"
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: headers({ "content-type": "application/json", accept: "text/event-stream" }),
      body: JSON.stringify(body)
    })
    if (!response.ok || response.body === null) {
      const failure = await response.json().catch(() => undefined)
      throw new Error(failure?.message ?? `${response.status} ${response.statusText}`)
    }
    await readEvents(response.body, ({ data }) => {
      const event = JSON.parse(data) as Event
      if (event._tag === "RunStarted" && selected === undefined) selected = event.sessionId
      if (event._tag === "RunStarted" || event._tag === "RunResumed") {
        ui.timelineTitle.textContent = `Run ${event.runId.slice(0, 8)}`
      }
      showEvent(event)
      timeline.add(event)
    })
    return true
  } catch (error) {
    showError(String((error as Error).message))
    return false
  } finally {
    try {
      await Promise.all([loadSessions(), loadSession()])
    } catch (error) {
      showError(String((error as Error).message))
    }
    ui.send.disabled = false
    document.body.dataset["running"] = "false"
  }
}

/** Answers a paused run's question: the run continues, its events following the earlier ones. */
const answer = async (run: PausedRun, response: unknown) => {
  if (selected !== run.sessionId) await select(run.sessionId)
  for (const node of ui.paused.querySelectorAll("button")) node.disabled = true
  const separator = Object.assign(document.createElement("li"), {
    className: "separator",
    textContent: `— answered: ${preview(response)}`
  })
  ui.events.append(separator)
  await streamEvents(`${workflowPath()}/runs/${encodeURIComponent(run.runId)}/continue`, { response, pause: run.pause })
}

ui.form.addEventListener("submit", (submit) => {
  submit.preventDefault()
  ui.events.replaceChildren()
  timeline.clear()
  clearMarks(graph)
  void streamEvents(`${workflowPath()}/runs`, {
    input: runInput(ui.input.value),
    ...(selected === undefined ? {} : { sessionId: selected })
  }).then((ok) => {
    if (ok) ui.input.value = ""
  })
})

// -----------------------------------------------------------------------------
// the workflow: its step tree, its input form, a past run's timeline
// -----------------------------------------------------------------------------

/** The input form of `workflow`: its fields, or the text area. */
const showWorkflow = (workflow: WorkflowInfo | undefined) => {
  ui.fields.replaceChildren()
  const fields = fieldsOf(workflow?.input)
  readFields = fields === undefined ? undefined : renderFields(ui.fields, fields)
  ui.fields.hidden = fields === undefined
  ui.input.hidden = fields !== undefined
  timeline.clear()
  ui.timelineTitle.textContent = "No run shown yet."
}

const loadGraph = async () => {
  const id = ui.workflow.value
  if (ui.graph.dataset["workflow"] === id) return
  const tree = await api<ReadonlyArray<StepNode>>(`${workflowPath()}/graph`)
  if (ui.workflow.value !== id) return
  graph = renderGraph(tree, `steps of ${workflows.find((w) => w.id === id)?.name ?? id}`)
  ui.graph.replaceChildren(graph.element)
  ui.graph.dataset["workflow"] = id
}

/** A past run's timeline, from its stored events (only the runs whose events the server stores have one). */
const replay = async (runId: string) => {
  showError("")
  timeline.clear()
  clearMarks(graph)
  ui.timelineTitle.textContent = `Run ${runId.slice(0, 8)} (replayed from its stored events)`
  let count = 0
  try {
    const response = await fetch(`${workflowPath()}/runs/${encodeURIComponent(runId)}/events`, {
      headers: headers({ accept: "text/event-stream" })
    })
    if (!response.ok || response.body === null) {
      const failure = await response.json().catch(() => undefined)
      throw new Error(failure?.message ?? `${response.status} ${response.statusText}`)
    }
    await readEvents(response.body, ({ data, event }) => {
      if (event === "EventsFailed") throw new Error(`The run's events are no longer kept: ${data}`)
      count++
      timeline.add(JSON.parse(data) as Event)
    })
    if (count === 0) ui.timelineTitle.textContent = `Run ${runId.slice(0, 8)}: no stored events`
  } catch (error) {
    showError(String((error as Error).message))
  }
}

void (async () => {
  try {
    await loadWorkflows()
    await refresh()
  } catch (error) {
    showError(String((error as Error).message))
  }
  document.body.dataset["ready"] = "true"
})()
