/**
 * The quickstart example, packed and installed as users get it, deployed to the local service; on the
 * test engine also with the lowest supported Node.js running the program and the provider host.
 */
import { LOWEST_NODE } from "./support/node-versions";
import { quickstartScenario } from "./support/quickstart-scenario";
import { DRIVER_KINDS, describeScenario } from "./support/scenario";

for (const kind of DRIVER_KINDS) describeScenario(kind, quickstartScenario);
describeScenario("engine", quickstartScenario, { node: LOWEST_NODE });
