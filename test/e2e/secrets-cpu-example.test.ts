/** The secrets-cpu example (Secret, CPU Endpoint, CPU Pod), packed and installed as users get it. */

import { DRIVER_KINDS, describeScenario } from "./support/scenario";
import { secretsCpuScenario } from "./support/secrets-cpu-scenario";

for (const kind of DRIVER_KINDS) describeScenario(kind, secretsCpuScenario);
