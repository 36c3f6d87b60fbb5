/** The quickstart example, packed and installed as users get it, deployed to the local service. */
import { quickstartScenario } from "./support/quickstart-scenario";
import { DRIVER_KINDS, describeScenario } from "./support/scenario";

for (const kind of DRIVER_KINDS) describeScenario(kind, quickstartScenario);
