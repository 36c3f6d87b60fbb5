/**
 * A cached model and a network volume
 * `modelName` is cached on the workers (shorter cold starts); the volume is mounted on every worker of
 * the endpoint.
 */
import { Endpoint, NetworkVolume, Template } from "runpodkit";

const volume = new NetworkVolume("weights", { size: 100, dataCenterId: "EU-RO-1" });

const template = new Template("vllm", { imageName: "ghcr.io/acme/vllm-worker:2.0", isServerless: true });

export const endpoint = new Endpoint("llm", {
  templateId: template.id,
  modelName: "https://huggingface.co/acme/model",
  networkVolumeId: volume.id,
  gpuIds: "ADA_48_PRO",
  workersMax: 2,
  executionTimeoutMs: 300_000,
  scalerType: "REQUEST_COUNT",
  scalerValue: 2,
});
