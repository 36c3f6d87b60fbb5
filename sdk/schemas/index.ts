/** The wire schemas, shared by the service (validation, OpenAPI) and the SDK (parsing replies). */
export * from "./billing";
export * from "./catalogue";
export * from "./common";
export * from "./container-registry-auth";
export * from "./docker-args";
export * from "./endpoint";
export * from "./job";
export * from "./network-volume";
export * from "./observe";
export * from "./pod";
export * from "./secret";
export * from "./template";
export * from "./user";
