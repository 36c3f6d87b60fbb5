/**
 * An endpoint deployed from a preconfigured repository release: hubReleaseId names the release whose
 * worker the endpoint runs; the template carries the image that release publishes.
 */
import * as pulumi from "@pulumi/pulumi";
import { Endpoint, Template } from "runpodkit";

const config = new pulumi.Config();

const template = new Template("hub-worker", {
  imageName: config.get("imageName") ?? "runpod/worker-v1-vllm:v2.7.0",
  isServerless: true,
});

const endpoint = new Endpoint("hub", {
  templateId: template.id,
  hubReleaseId: config.get("hubReleaseId") ?? "hub-release-vllm-2-7-0",
  gpuIds: "ADA_24",
  workersMax: 1,
});

export const endpointId = endpoint.id;
export const endpointUrl = endpoint.url;
export const hubReleaseId = endpoint.hubReleaseId;
