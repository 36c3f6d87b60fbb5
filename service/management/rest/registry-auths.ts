import {
  ContainerRegistryAuth,
  ContainerRegistryAuthCreateInput,
  ContainerRegistryAuthList,
} from "../../../sdk/schemas/container-registry-auth";
import { publicRegistryAuth } from "../model/container-registry-auth";
import { type RestRoute, route } from "./route";

const TAG = "container registry auths";

/** No update here: the real REST API has none (GraphQL updateRegistryAuth does it). */
export const registryAuthRoutes: RestRoute[] = [
  route(
    {
      method: "POST",
      url: "/containerregistryauth",
      operationId: "CreateContainerRegistryAuth",
      tag: TAG,
      summary: "Create a container registry auth (name unique per account; answers only {id, name})",
      body: ContainerRegistryAuthCreateInput,
      response: ContainerRegistryAuth,
    },
    (c) => publicRegistryAuth(c.management.registryAuths.create(c.accountId, c.body)),
  ),
  route(
    {
      method: "GET",
      url: "/containerregistryauth",
      operationId: "ListContainerRegistryAuths",
      tag: TAG,
      summary: "List container registry auths",
      response: ContainerRegistryAuthList,
    },
    (c) => c.management.registryAuths.list(c.accountId).map(publicRegistryAuth),
  ),
  route(
    {
      method: "GET",
      url: "/containerregistryauth/:containerRegistryAuthId",
      operationId: "GetContainerRegistryAuth",
      tag: TAG,
      summary: "Find a container registry auth by id",
      response: ContainerRegistryAuth,
    },
    (c) =>
      publicRegistryAuth(c.management.registryAuths.get(c.accountId, c.params.containerRegistryAuthId ?? "")),
  ),
  route(
    {
      method: "DELETE",
      url: "/containerregistryauth/:containerRegistryAuthId",
      operationId: "DeleteContainerRegistryAuth",
      tag: TAG,
      summary: "Delete a container registry auth (refused while a template uses it)",
      status: 204,
    },
    (c) => c.management.registryAuths.delete(c.accountId, c.params.containerRegistryAuthId ?? ""),
  ),
];
