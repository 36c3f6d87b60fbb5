/** The private-model and hub-release examples, packed and installed as users get them, on the local service. */
import { hubReleaseScenario, privateModelScenario } from "./support/private-model-scenario";
import { DRIVER_KINDS, describeScenario } from "./support/scenario";

for (const kind of DRIVER_KINDS) {
  describeScenario(kind, privateModelScenario);
  describeScenario(kind, hubReleaseScenario);
}
