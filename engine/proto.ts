/**
 * The gRPC stubs and protobuf messages the engine speaks, loaded from the project's @pulumi/pulumi.
 * Struct and Empty must come from the google-protobuf copy those stubs were generated against (pulumi
 * ships its own 3.x copy), or messages built here would not serialize inside pulumi's messages.
 */
import { createRequire } from "node:module";
import * as engineGrpc from "@pulumi/pulumi/proto/engine_grpc_pb";
import * as enginePb from "@pulumi/pulumi/proto/engine_pb";
import * as providerGrpc from "@pulumi/pulumi/proto/provider_grpc_pb";
import * as providerPb from "@pulumi/pulumi/proto/provider_pb";
import * as resourceGrpc from "@pulumi/pulumi/proto/resource_grpc_pb";
import * as resourcePb from "@pulumi/pulumi/proto/resource_pb";
import type * as EmptyModule from "google-protobuf/google/protobuf/empty_pb";
import type * as StructModule from "google-protobuf/google/protobuf/struct_pb";

const requireFromPulumi = createRequire(require.resolve("@pulumi/pulumi/package.json"));
const structModule = requireFromPulumi("google-protobuf/google/protobuf/struct_pb") as typeof StructModule;
const emptyModule = requireFromPulumi("google-protobuf/google/protobuf/empty_pb") as typeof EmptyModule;

export const Struct = structModule.Struct;
export type Struct = StructModule.Struct;
export const Empty = emptyModule.Empty;
export type Empty = EmptyModule.Empty;

export { engineGrpc, enginePb, providerGrpc, providerPb, resourceGrpc, resourcePb };

/** gRPC limits as Pulumi sets them: serialized dynamic providers can be large. */
export const grpcOptions = {
  "grpc.max_receive_message_length": 400 * 1024 * 1024,
  "grpc.max_send_message_length": 400 * 1024 * 1024,
};
