/**
 * The scripted model of session naming (scenario 7): facts from the
 * researcher, an article from the writer, and a title (from the first input)
 * for the session namer.
 *
 * @since 0.1.0
 */
import { TestModel } from "@sessionflow/core"
import * as Offline from "./Offline.js"

/** The subject of a request ("Write an article about X" → "X"). */
export const subjectOf = (request: string): string =>
  Offline.topicOf(
    request.replace(
      new RegExp(
        String.raw`^\s*(?:please\s+)?(?:write|draft|create|give me)\s+(?:an?\s+|the\s+)?(?:short\s+)?` +
          String.raw`(?:article|post|piece|essay|blog post)\s+(?:about|on)\s+`,
        "i"
      ),
      ""
    )
  )

const titleFrom = (namerPrompt: string): string => {
  const first = /First input:\n(.*)/.exec(namerPrompt)?.[1] ?? namerPrompt
  return Offline.titleCase(subjectOf(first)).split(" ").slice(0, 6).join(" ")
}

const research = (subject: string) =>
  [
    `Key facts on ${subject}:`,
    "- Solar and wind are now the cheapest new electricity in most markets.",
    "- Renewables cut greenhouse gases and local air pollution.",
    "- The sector employs millions, with jobs spread across regions.",
    "- Home-grown energy reduces exposure to fuel-price shocks."
  ].join("\n")

const article = (subject: string) =>
  [
    `# ${Offline.titleCase(subject)}`,
    "",
    "Energy is changing faster than at any time in a century, and renewables are leading the shift.",
    "",
    "**Cheaper power.** New solar and wind farms now undercut " +
    "fossil plants on cost in most markets, and their fuel is free.",
    "",
    "**Cleaner air and climate.** Every megawatt-hour from the sun " +
    "or wind displaces emissions that harm both lungs and the climate.",
    "",
    "**Jobs and resilience.** Building and maintaining renewables creates " +
    "local work, and home-grown energy shields economies from price shocks.",
    "",
    "The conclusion is simple: renewables are no longer only the right choice — they are the smart one."
  ].join("\n")

export const offlineModel = TestModel.layer((request) => {
  switch (request.agent) {
    case "Research Agent":
      return TestModel.text(research(subjectOf(request.lastUserMessage ?? "")))
    case "Writing Agent":
      return TestModel.text(article(subjectOf(Offline.userRequest(request))))
    default:
      // the session namer (no agent): a short title
      return TestModel.text(titleFrom(request.lastUserMessage ?? ""))
  }
})
