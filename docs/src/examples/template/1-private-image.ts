/**
 * A private image
 * The template pulls with the registry credentials of a ContainerRegistryAuth; `env` is stored as a
 * secret in the state.
 */
import * as pulumi from "@pulumi/pulumi";
import { ContainerRegistryAuth, Template } from "runpodkit";

const config = new pulumi.Config();

const registry = new ContainerRegistryAuth("ghcr", {
  username: config.require("registryUsername"),
  password: config.requireSecret("registryPassword"),
});

export const template = new Template("worker", {
  imageName: pulumi.interpolate`ghcr.io/acme/worker:${config.require("imageTag")}`,
  isServerless: true,
  containerRegistryAuthId: registry.id,
  containerDiskInGb: 20,
  env: { LOG_LEVEL: "info", HF_TOKEN: config.requireSecret("hfToken") },
});
