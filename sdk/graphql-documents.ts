/**
 * The GraphQL documents the SDK sends, with the type names of the real service's schema. Values always
 * travel as variables: nothing a caller passes is ever interpolated into a document.
 */

/** Endpoint fields every version of the real service's Endpoint type has. */
const PORTABLE_ENDPOINT_FIELDS = `
  id name userId templateId gpuIds idleTimeout locations flashBootType scalerType scalerValue
  workersMin workersMax workersStandby networkVolumeId type computeType gpuCount executionTimeoutMs
  env { key value } allowedCudaVersions instanceIds version createdAt pods { id desiredStatus }`;

/** Plus the deployment source (hub release, cached model), which a service may not expose. */
const EXTENDED_ENDPOINT_FIELDS = `${PORTABLE_ENDPOINT_FIELDS} hubReleaseId modelName`;

function endpointDocuments(fields: string) {
  return {
    save: `mutation saveEndpoint($input: EndpointInput!) {
  saveEndpoint(input: $input) { ${fields} }
}`,
    get: `query getEndpoint($id: String!) {
  myself { endpoint(id: $id) { ${fields} } }
}`,
    list: `query listEndpoints {
  myself { endpoints { ${fields} } }
}`,
  };
}
export type EndpointDocuments = ReturnType<typeof endpointDocuments>;

/**
 * The endpoint documents in two selections: the client starts with "extended" and falls back to
 * "portable" when the service's schema refuses the extra fields (a validation error, nothing ran).
 */
export const ENDPOINT_DOCUMENTS = {
  extended: endpointDocuments(EXTENDED_ENDPOINT_FIELDS),
  portable: endpointDocuments(PORTABLE_ENDPOINT_FIELDS),
} as const;

const TEMPLATE_FIELDS = `
  id name imageName category isServerless isPublic containerDiskInGb volumeInGb volumeMountPath
  dockerArgs env { key value } ports readme containerRegistryAuthId`;

const VOLUME_FIELDS = "id name size dataCenterId";
const REGISTRY_AUTH_FIELDS = "id name";

export const DELETE_ENDPOINT = `mutation deleteEndpoint($id: String!) {
  deleteEndpoint(id: $id)
}`;

export const SERVERLESS_DISCOUNT = `query serverlessDiscount {
  myself { serverlessDiscount { discountFactor type expirationDate } }
}`;

export const SAVE_TEMPLATE = `mutation saveTemplate($input: SaveTemplateInput!) {
  saveTemplate(input: $input) { ${TEMPLATE_FIELDS} }
}`;

export const DELETE_TEMPLATE = `mutation deleteTemplate($templateName: String!) {
  deleteTemplate(templateName: $templateName)
}`;

export const LIST_TEMPLATES = `query listTemplates {
  myself { podTemplates { ${TEMPLATE_FIELDS} } }
}`;

export const CREATE_NETWORK_VOLUME = `mutation createNetworkVolume($input: CreateNetworkVolumeInput!) {
  createNetworkVolume(input: $input) { ${VOLUME_FIELDS} }
}`;

export const UPDATE_NETWORK_VOLUME = `mutation updateNetworkVolume($input: UpdateNetworkVolumeInput!) {
  updateNetworkVolume(input: $input) { ${VOLUME_FIELDS} }
}`;

export const DELETE_NETWORK_VOLUME = `mutation deleteNetworkVolume($input: DeleteNetworkVolumeInput!) {
  deleteNetworkVolume(input: $input)
}`;

export const LIST_NETWORK_VOLUMES = `query listNetworkVolumes {
  myself { networkVolumes { ${VOLUME_FIELDS} } }
}`;

export const SAVE_REGISTRY_AUTH = `mutation saveRegistryAuth($input: SaveRegistryAuthInput!) {
  saveRegistryAuth(input: $input) { ${REGISTRY_AUTH_FIELDS} }
}`;

export const UPDATE_REGISTRY_AUTH = `mutation updateRegistryAuth($input: UpdateRegistryAuthInput!) {
  updateRegistryAuth(input: $input) { ${REGISTRY_AUTH_FIELDS} }
}`;

export const DELETE_REGISTRY_AUTH = `mutation deleteRegistryAuth($registryAuthId: String!) {
  deleteRegistryAuth(registryAuthId: $registryAuthId)
}`;

export const LIST_REGISTRY_AUTHS = `query listRegistryAuths {
  myself { containerRegistryCreds { ${REGISTRY_AUTH_FIELDS} } }
}`;
