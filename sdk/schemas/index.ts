/** The wire schemas, shared by the service (validation, OpenAPI) and the SDK (parsing replies). */
export * from "./billing";
export * from "./common";
export * from "./container-registry-auth";
export * from "./docker-args";
export * from "./endpoint";
export * from "./job";
export * from "./network-volume";
export * from "./pod";
export * from "./template";
