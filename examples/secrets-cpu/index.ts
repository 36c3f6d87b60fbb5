/**
 * Secrets as code and CPU compute: an account Secret holds a token; a CPU endpoint's workers get it
 * through a `{{ RUNPOD_SECRET_<name> }}` reference (the service puts the value in their environment
 * when they start, so it appears in no configuration); a CPU pod, stopped or started by config,
 * references it the same way. The CPU flavors on offer come from getCpuFlavors.
 */
import * as pulumi from "@pulumi/pulumi";
import { Endpoint, getCpuFlavors, Pod, Secret, Template } from "runpodkit";

const config = new pulumi.Config();

const apiToken = new Secret("api-token", {
  // Secret names are unique in the account: without secretName the provider generates one
  // (api-token-<suffix>), so a second stack of this program (prod beside dev) gets its own secret.
  name: config.get("secretName"),
  value: config.requireSecret("apiToken"),
  description: "Token the workers use to call the upstream API",
});

const env = apiToken.reference.apply((reference) => ({ API_TOKEN: reference }));

const template = new Template("cpu-worker", {
  imageName: "runpodkit/echo:1.0",
  isServerless: true,
  category: "CPU",
});

const endpoint = new Endpoint("cpu-api", {
  templateId: template.id,
  computeType: "CPU",
  instanceIds: ["cpu3c-2-4"],
  workersMin: 0,
  workersMax: 2,
  env,
});

const pod = new Pod("cpu-box", {
  imageName: "runpodkit/echo:1.0",
  computeType: "CPU",
  cpuFlavorIds: ["cpu3c"],
  vcpuCount: 2,
  env,
  desiredStatus: config.getBoolean("podStopped") ? "EXITED" : "RUNNING",
});

/** The flavors this service offers, read when the program runs. */
export const cpuFlavors = pulumi.output(getCpuFlavors()).apply((flavors) => flavors.map((f) => f.id));
export const secretName = apiToken.name;
export const endpointId = endpoint.id;
export const podId = pod.id;
export const podCostPerHr = pod.costPerHr;
