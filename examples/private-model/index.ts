/**
 * A model server from a private image: the model weights live on a network volume and are cached on
 * the workers (modelName), the image is pulled with registry credentials whose password comes from a
 * secret config value and stays a secret in the state.
 */
import * as pulumi from "@pulumi/pulumi";
import { ContainerRegistryAuth, Endpoint, NetworkVolume, Template } from "runpodkit";

const config = new pulumi.Config();

const volume = new NetworkVolume("models", {
  size: config.getNumber("volumeSize") ?? 50,
  // A volume cannot move: a new data center replaces it (and the endpoint follows the new one).
  dataCenterId: config.get<"EU-RO-1" | "US-TX-3" | "EU-SE-1">("dataCenterId") ?? "EU-RO-1",
  // Faster storage for loading weights. The storage of a volume is fixed: changing this replaces it.
  isNextGenStorage: config.getBoolean("nextGenStorage") ?? true,
});

const registry = new ContainerRegistryAuth("ghcr", {
  username: config.require("registryUsername"),
  password: config.requireSecret("registryPassword"),
});

const template = new Template("llm-worker", {
  imageName: config.get("imageName") ?? "ghcr.io/acme/llm-worker:2.1",
  isServerless: true,
  containerRegistryAuthId: registry.id,
  containerDiskInGb: 20,
  volumeMountPath: "/runpod-volume",
  // The start command as a shell would read it (dockerStartCmd shows it as an argv array).
  dockerArgs: 'python -u /app/serve.py --model-dir "/runpod-volume/models"',
  // SSH into pods started from this template, to look around while debugging.
  startSsh: true,
});

const endpoint = new Endpoint("llm", {
  templateId: template.id,
  gpuIds: "AMPERE_48,ADA_48_PRO",
  modelName: config.get("modelName") ?? "https://huggingface.co/Qwen/Qwen2.5-7B-Instruct",
  networkVolumeId: volume.id,
  flashBootType: "FLASHBOOT",
  workersMin: config.getNumber("workersMin") ?? 0,
  workersMax: config.getNumber("workersMax") ?? 3,
  idleTimeout: 30,
  executionTimeoutMs: 300_000,
  env: { MAX_MODEL_LEN: config.get("maxModelLen") ?? "8192" },
});

export const endpointId = endpoint.id;
/** The job API of the endpoint: POST {jobUrl}/run with {"input": {...}}. */
export const jobUrl = endpoint.url;
export const volumeId = volume.id;
export const registryAuthId = registry.id;
export const templateId = template.id;
export const storageType = volume.storageType;
