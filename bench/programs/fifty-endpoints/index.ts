/**
 * Bench program: `count` (default 50) endpoints, each with its own template. Raising `generation`
 * changes every template's env and every endpoint's idleTimeout, an in-place update of all of them.
 */
import * as pulumi from "@pulumi/pulumi";
import { Endpoint, Template } from "runpodkit";

const config = new pulumi.Config();
const count = config.getNumber("count") ?? 50;
const generation = config.getNumber("generation") ?? 1;

const endpointIds: pulumi.Output<string>[] = [];
for (let i = 0; i < count; i++) {
  const template = new Template(`worker-${i}`, {
    imageName: "runpodkit/echo:1.0",
    isServerless: true,
    containerDiskInGb: 10,
    env: { GENERATION: String(generation) },
  });
  const endpoint = new Endpoint(`endpoint-${i}`, {
    templateId: template.id,
    gpuIds: "AMPERE_16",
    workersMin: 0,
    workersMax: 1,
    idleTimeout: 5 * generation,
  });
  endpointIds.push(endpoint.id);
}

export const endpoints = pulumi.all(endpointIds);
