/**
 * A queue endpoint on a template's image
 * Workers scale from zero on the job queue; jobs go to `endpoint.url`.
 */
import { Endpoint, Template } from "runpodkit";

const template = new Template("worker", {
  imageName: "ghcr.io/acme/worker:1.4.2",
  isServerless: true,
  env: { MODEL: "small" },
});

const endpoint = new Endpoint("inference", {
  templateId: template.id,
  gpuIds: "AMPERE_48,-NVIDIA RTX A6000", // pools in priority order, with an exclusion
  workersMin: 0,
  workersMax: 3,
  idleTimeout: 5,
  flashBootType: "FLASHBOOT",
});

/** POST {endpointUrl}/run or /runsync submits a job. */
export const endpointUrl = endpoint.url;
