/**
 * The scenarios, in one list for the command line (`Cli`) and the server
 * (`Serve`), which each import it from here rather than from the other.
 *
 * @internal
 */
import * as Approval from "../Approval.js"
import * as CustomExecutors from "../CustomExecutors.js"
import * as GreetingCondition from "../GreetingCondition.js"
import * as JobTracker from "../JobTracker.js"
import * as ProjectTeam from "../ProjectTeam.js"
import * as Routers from "../Routers.js"
import type * as Scenario from "../Scenario.js"
import * as SessionNaming from "../SessionNaming.js"
import * as ShoppingList from "../ShoppingList.js"

/** The seven scenarios of the seed, in its order, then the approval scenario. @internal */
export const scenarios: ReadonlyArray<Scenario.Scenario> = [
  ShoppingList.scenario,
  JobTracker.scenario,
  CustomExecutors.scenario,
  GreetingCondition.scenario,
  Routers.scenario,
  ProjectTeam.scenario,
  SessionNaming.scenario,
  Approval.scenario
]
