/**
 * The scripted model of the custom executors (scenario 3): the team leader
 * delegates to both researchers, then writes a brief; the researchers and the
 * planner answer from the topic.
 *
 * @since 0.1.0
 */
import { StepOutput, TestModel } from "@sessionflow/core"
import * as Offline from "./Offline.js"

const topicFrom = (text: string): string =>
  /Core Topic:\s*(.+)/.exec(text)?.[1]?.trim() ?? Offline.topicOf(text.split("\n")[0] ?? text)

const memberReply = (agent: string, task: string): string => {
  const topic = Offline.topicOf(task.replace(/^(research|find|look up|search)( for| into)?\s*/i, ""))
  return agent === "Hackernews Agent"
    ? [
      `Hacker News on "${topic}":`,
      "- Top threads favour hands-on write-ups over announcements.",
      "- Commenters ask for benchmarks, costs and failure stories.",
      "- Open-source tooling gets the most sustained discussion."
    ].join("\n")
    : [
      `Latest coverage of "${topic}":`,
      "- Analysts highlight fast adoption in mid-size companies.",
      "- Tutorials and case studies are the most shared formats.",
      "- Regulation and cost control are recurring themes."
    ].join("\n")
}

const leaderTurn = (request: TestModel.Request): TestModel.Reply => {
  const topic = Offline.topicOf(Offline.userRequest(request))
  if (request.turn === 0) {
    return TestModel.toolCalls(
      ["delegate_task_to_member", { member_name: "Hackernews Agent", task: `Research ${topic}` }],
      ["delegate_task_to_member", { member_name: "Web Agent", task: `Research ${topic}` }]
    )
  }
  const findings = Offline.pastCalls(request).map((c) => StepOutput.contentText(c.result))
  return TestModel.text(
    [
      `Research brief: ${topic}`,
      ...findings,
      "Strategy: lead with practical, evidence-backed posts; answer the community's open questions."
    ].join("\n\n")
  )
}

const plannerReply = (prompt: string): string => {
  const topic = topicFrom(prompt)
  const plan = /Plan ID:\s*#(\d+)/.exec(prompt)?.[1] ?? "?"
  return [
    `4-week content plan #${plan} for "${topic}" (3 posts a week):`,
    `Week 1 — Foundations: an explainer thread, a "what changed" carousel, a short video on ${topic}.`,
    "Week 2 — Evidence: a case study, a benchmark roundup, a practitioner Q&A.",
    "Week 3 — How-to: a step-by-step tutorial, a tools comparison, a live session.",
    "Week 4 — Community: a myths-vs-facts post, a reader poll, a recap newsletter.",
    "Channels: LinkedIn and X for reach, the blog for depth; repost the best performers."
  ].join("\n")
}

export const offlineModel = TestModel.layer((request) => {
  switch (request.agent) {
    case "Hackernews Agent":
    case "Web Agent":
      return TestModel.text(memberReply(request.agent, request.lastUserMessage ?? ""))
    case "Content Planner":
      return TestModel.text(plannerReply(request.lastUserMessage ?? ""))
    default:
      return leaderTurn(request)
  }
})
