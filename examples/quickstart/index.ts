/**
 * Quickstart: a serverless endpoint running a public container image (runpodkit/echo is built into
 * the local service: its workers answer each job with its input).
 * A Template names the image; an Endpoint runs workers from it and scales them on the job queue.
 */
import * as pulumi from "@pulumi/pulumi";
import { Endpoint, Template } from "runpodkit";

const config = new pulumi.Config();

const template = new Template("echo-worker", {
  imageName: config.get("imageName") ?? "runpodkit/echo:1.0",
  isServerless: true,
  // Changing the category replaces the template (the service cannot change it in place).
  category: config.get<"NVIDIA" | "AMD" | "CPU">("category") ?? "NVIDIA",
  containerDiskInGb: 10,
  env: { GREETING: "hello" },
});

const endpoint = new Endpoint("echo", {
  templateId: template.id,
  gpuIds: "AMPERE_16,AMPERE_24",
  workersMin: config.getNumber("workersMin") ?? 0,
  workersMax: config.getNumber("workersMax") ?? 2,
  idleTimeout: 5,
  env: { LOG_LEVEL: config.get("logLevel") ?? "info" },
});

export const templateId = template.id;
export const endpointId = endpoint.id;
/** Submit jobs here: POST {url}/run or {url}/runsync. */
export const endpointUrl = endpoint.url;
