/**
 * A token for the workers, kept out of every configuration
 * The value lives only in the service's secret store and in Pulumi state (as a secret); the endpoint's
 * env holds the reference, which the service replaces with the value when a worker starts.
 */
import * as pulumi from "@pulumi/pulumi";
import { Endpoint, Secret, Template } from "runpodkit";

const config = new pulumi.Config();

const hfToken = new Secret("hf-token", {
  name: "hf_token",
  value: config.requireSecret("hfToken"),
  description: "Hugging Face read token",
});

const template = new Template("worker", { imageName: "ghcr.io/acme/worker:1.2", isServerless: true });

const endpoint = new Endpoint("api", {
  templateId: template.id,
  gpuIds: "AMPERE_24",
  env: { HF_TOKEN: hfToken.reference },
});

export const endpointId = endpoint.id;
