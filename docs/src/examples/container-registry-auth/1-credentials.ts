/**
 * Registry credentials from secret config
 * Set them with `pulumi config set registryUser ...` and `pulumi config set --secret registryToken ...`.
 * Templates refer to them by id (`containerRegistryAuthId`).
 */
import * as pulumi from "@pulumi/pulumi";
import { ContainerRegistryAuth } from "runpodkit";

const config = new pulumi.Config();

const credentials = new ContainerRegistryAuth("registry", {
  username: config.require("registryUser"),
  password: config.requireSecret("registryToken"),
});

export const registryAuthId = credentials.id;
