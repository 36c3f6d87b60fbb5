/**
 * The GraphQL management API: ONE SDL, executed by graphql-js. Names follow the real service so
 * existing documents (runpod-python, runpodctl, the Pulumi provider) work unchanged. Kept as a .ts
 * string so the build ships it without a copy step.
 */
export const typeDefs = /* GraphQL */ `
  "An ISO-8601 date and time."
  scalar DateTime

  "An account secret; its value is write-only and never part of a reply."
  type Secret {
    id: ID!
    name: String!
    description: String
    createdAt: DateTime!
    updatedAt: DateTime
  }

  "name: a letter or _ first, then letters, digits and _.-/ (1-191); not starting with RUNPOD."
  input SecretCreateInput {
    name: String!
    value: String!
    description: String
  }

  input SecretValueUpdateInput {
    id: ID!
    value: String!
  }

  input SecretDescriptionUpdateInput {
    id: ID!
    description: String!
  }

  "PRIORITY_FLASHBOOT: flashboot with priority on cached workers (half the FLASHBOOT cold start here)."
  enum FlashBootType {
    OFF
    FLASHBOOT
    PRIORITY_FLASHBOOT
  }

  "A network volume an endpoint mounts, and where it is."
  type NetworkVolumeIds {
    networkVolumeId: String
    dataCenterId: String
  }

  input NetworkVolumeIdsInput {
    networkVolumeId: String!
  }

  type EnvironmentVariable {
    key: String!
    value: String!
  }

  input EnvironmentVariableInput {
    key: String!
    value: String!
  }

  enum PodStatus {
    CREATED
    RUNNING
    RESTARTING
    EXITED
    PAUSED
    DEAD
    TERMINATED
  }

  enum PodType {
    INTERRUPTABLE
    RESERVED
    BID
    BACKGROUND
  }

  enum CloudTypeEnum {
    SECURE
    COMMUNITY
    ALL
  }

  enum ComputeType {
    CPU
    GPU
  }

  type PodRuntimePort {
    ip: String
    isIpPublic: Boolean
    privatePort: Int
    publicPort: Int
    type: String
  }

  "Null unless RUNNING; no ports: no container runs on this service."
  type PodRuntime {
    uptimeInSeconds: Int
    ports: [PodRuntimePort]
  }

  type PodMachine {
    podHostId: String
    gpuDisplayName: String
    gpuTypeId: String
    dataCenterId: String
    secureCloud: Boolean
  }

  """
  A rented pod (GPU or CPU; it holds settings and a lifecycle, and runs no container here) or a
  serverless worker (endpointId set). desiredStatus is RUNNING, EXITED or TERMINATED.
  """
  type Pod {
    id: String!
    name: String!
    machineId: String!
    imageName: String
    dockerArgs: String
    dockerId: String
    gpuCount: Int!
    vcpuCount: Float!
    memoryInGb: Float!
    containerDiskInGb: Int
    volumeInGb: Float
    volumeMountPath: String
    desiredStatus: PodStatus!
    "USD per hour while running."
    costPerHr: Float!
    "KEY=value entries."
    env: [String]
    "Comma list, e.g. 8888/http,22/tcp."
    ports: String
    port: Int
    templateId: String
    networkVolumeId: String
    containerRegistryAuthId: String
    podType: PodType
    endpointId: String
    locked: Boolean
    dataCenterId: String
    lastStartedAt: String
    lastStatusChange: String
    uptimeSeconds: Int
    runtime: PodRuntime
    machine: PodMachine
  }

  type PodTemplate {
    id: String!
    name: String!
    imageName: String!
    category: String
    isServerless: Boolean!
    isPublic: Boolean
    containerDiskInGb: Int!
    volumeInGb: Int!
    volumeMountPath: String
    "The start command as one string."
    dockerArgs: String!
    env: [EnvironmentVariable!]!
    "Comma list, e.g. 8888/http,22/tcp."
    ports: String!
    readme: String
    containerRegistryAuthId: String
    startSsh: Boolean
    startJupyter: Boolean
    "A script pods of the template run at start."
    startScript: String
  }

  type Endpoint {
    id: String!
    name: String!
    userId: String!
    templateId: String!
    template: PodTemplate
    "GPU pools with exclusions, e.g. AMPERE_48,-NVIDIA RTX A6000; empty when the GPU types set through REST gpuTypeIds are not a set of pools (saveEndpoint refuses it)."
    gpuIds: String!
    "The GPU types stored, in priority order, as REST gpuTypeIds: also those no pool holds (e.g. NVIDIA B200), for which gpuIds reads empty. Empty for a CPU endpoint."
    gpuTypeIds: [String!]!
    idleTimeout: Int!
    locations: String
    flashBootType: FlashBootType!
    scalerType: String!
    scalerValue: Int!
    workersMin: Int!
    workersMax: Int!
    workersStandby: Int!
    networkVolumeId: String
    hubReleaseId: String
    modelName: String
    "QB (queue-based) or LB (load balancing)."
    type: String!
    computeType: String!
    gpuCount: Int!
    executionTimeoutMs: Int!
    env: [EnvironmentVariable!]!
    "Comma list of CUDA versions; empty = any."
    allowedCudaVersions: String
    instanceIds: [String!]!
    version: Int!
    createdAt: String!
    pods: [Pod!]!
    "Legacy per-endpoint key of the real service; always null here."
    aiKey: String
    "The attached network volume (networkVolumeId), null when none."
    networkVolume: NetworkVolume
    "Volumes in several data centers: workers in each mount the one there."
    networkVolumeIds: [NetworkVolumeIds!]!
    "Workers only on hosts with at least this CUDA version; null for any."
    minCudaVersion: String
  }

  type NetworkVolume {
    id: String!
    name: String!
    size: Int!
    dataCenterId: String!
    "Set at creation by isNextGenStorage; never changes."
    storageType: StorageType
  }

  enum StorageType {
    CEPH_FS
    DDN
    MOOSE_FS
    ONE_FS
    PURE
    VAST
  }

  "Credentials are never readable."
  type ContainerRegistryAuth {
    id: String!
    name: String!
  }

  type ServerlessDiscount {
    discountFactor: Float!
    type: String!
    expirationDate: String
  }

  type User {
    id: String!
    "Referenced from env as {{ RUNPOD_SECRET_<name> }}."
    secrets: [Secret!]!
    "Rented pods (serverless workers are listed under their endpoint)."
    pods: [Pod!]!
    "SSH public keys, one per line; empty when none."
    pubKey: String
    endpoints: [Endpoint!]!
    endpoint(id: String!): Endpoint
    serverlessDiscount: ServerlessDiscount
    podTemplates: [PodTemplate!]!
    networkVolumes: [NetworkVolume!]!
    containerRegistryCreds: [ContainerRegistryAuth!]!
  }

  type Query {
    myself: User!
    "A pod by id; null when the account has none."
    pod(input: PodFilter): Pod
    "GPU types; input narrows to one id or several (unknown ids: an empty list)."
    gpuTypes(input: GpuTypeFilter): [GpuType]
    cpuFlavors(input: CpuFlavorInput): [CpuFlavor]
    "The data centers network volumes, pods and endpoints may use."
    dataCenters: [DataCenter]
  }

  input GpuTypeFilter {
    id: String
    ids: [String!]
    cluster: Boolean
  }

  input GpuLowestPriceInput {
    gpuCount: Int!
    countryCode: String
    dataCenterId: String
    includeAiApi: Boolean
    minDisk: Int
    minDownload: Int
    minMemoryInGb: Int
    minUpload: Int
    minVcpuCount: Int
    secureCloud: Boolean
    supportPublicIp: Boolean
    cudaVersion: String
    allowedCudaVersions: [String]
    minCudaVersion: String
  }

  "Prices are USD per GPU-hour; null where the type is not offered."
  type LowestPrice {
    gpuName: String
    gpuTypeId: String
    minimumBidPrice: Float
    uninterruptablePrice: Float
    minMemory: Int
    minVcpu: Int
    rentedCount: Int
    totalCount: Int
    stockStatus: String
    countryCode: String
    supportPublicIp: Boolean
    maxGpuCount: Int
    availableGpuCounts: [Int]
  }

  "Prices are USD per GPU-hour; null where the type is not offered that way."
  type GpuType {
    id: String
    displayName: String
    manufacturer: String
    memoryInGb: Int
    cudaCores: Int
    secureCloud: Boolean
    communityCloud: Boolean
    securePrice: Float
    communityPrice: Float
    communitySpotPrice: Float
    secureSpotPrice: Float
    oneWeekPrice: Float
    oneMonthPrice: Float
    threeMonthPrice: Float
    maxGpuCount: Int
    maxGpuCountCommunityCloud: Int
    maxGpuCountSecureCloud: Int
    minPodGpuCount: Int
    lowestPrice(input: GpuLowestPriceInput): LowestPrice
  }

  input CpuFlavorInput {
    id: String
    slsOnly: Boolean
    isSls: Boolean
  }

  "Instance ids are <id>-<vcpus>-<vcpus x ramMultiplier>, e.g. cpu3c-2-4."
  type CpuFlavor {
    id: String
    groupId: String
    groupName: String
    displayName: String
    minVcpu: Float
    maxVcpu: Int
    vcpuBurstable: Boolean
    ramMultiplier: Float
    diskLimitPerVcpu: Int
  }

  enum DataCenterRegion {
    NORTH_AMERICA
    ASIA
    EUROPE
    MIDDLE_EAST
    AFRICA
    SOUTH_AMERICA
    OCEANIA
    ANTARCTICA
    UNKNOWN
  }

  enum Compliance {
    GDPR
    ISO_IEC_27001
    ISO_14001
    PCI_DSS
    HITRUST
    SOC_1_TYPE_2
    SOC_2_TYPE_2
    SOC_3_TYPE_2
    ITAR
    FISMA_HIGH
    HIPAA
  }

  input GpuAvailabilityInput {
    gpuCount: Int
    minDisk: Int
    minMemoryInGb: Int
    minVcpuCount: Int
    secureCloud: Boolean
    allowedCudaVersions: [String]
    minCudaVersion: String
    includeAiApi: Boolean
  }

  type GpuAvailability {
    available: Boolean
    stockStatus: String
    gpuTypeId: String
    gpuTypeDisplayName: String
    displayName: String
    id: String
  }

  type DataCenter {
    id: String
    name: String
    location: String
    listed: Boolean
    storageSupport: Boolean
    globalNetwork: Boolean
    region: DataCenterRegion
    compliance: [Compliance]
    gpuAvailability(input: GpuAvailabilityInput): [GpuAvailability]
  }

  "Without id: create. With id: FULL REPLACE (omitted fields reset to defaults)."
  input EndpointInput {
    id: String
    name: String!
    templateId: String!
    gpuIds: String!
    idleTimeout: Int
    locations: String
    flashBootType: FlashBootType
    scalerType: String
    scalerValue: Int
    workersMin: Int
    workersMax: Int
    workersStandby: Int
    networkVolumeId: String
    hubReleaseId: String
    modelName: String
    type: String
    gpuCount: Int
    executionTimeoutMs: Int
    env: [EnvironmentVariableInput!]
    allowedCudaVersions: String
    instanceIds: [String!]
    computeType: String
    networkVolumeIds: [NetworkVolumeIdsInput!]
    minCudaVersion: String
  }

  "Without id: create. With id: full replace (category and isServerless kept when omitted)."
  input SaveTemplateInput {
    id: String
    name: String!
    imageName: String!
    category: String
    isServerless: Boolean
    containerDiskInGb: Int
    volumeInGb: Int
    volumeMountPath: String
    dockerArgs: String
    env: [EnvironmentVariableInput!]
    ports: String
    readme: String
    isPublic: Boolean
    containerRegistryAuthId: String
    startSsh: Boolean
    startJupyter: Boolean
    startScript: String
  }

  input CreateNetworkVolumeInput {
    name: String!
    size: Int!
    dataCenterId: String!
    "Next-gen storage (default false). It cannot be changed later."
    isNextGenStorage: Boolean
  }

  input UpdateNetworkVolumeInput {
    id: String!
    name: String
    size: Int
  }

  input DeleteNetworkVolumeInput {
    id: String!
  }

  input SaveRegistryAuthInput {
    name: String!
    username: String!
    password: String!
  }

  input UpdateRegistryAuthInput {
    id: String!
    username: String!
    password: String!
  }

  input PodFilter {
    podId: String!
  }

  input PodFindAndDeployOnDemandInput {
    aiApiId: String
    cloudType: CloudTypeEnum
    containerDiskInGb: Int
    containerRegistryAuthId: String
    countryCode: String
    deployCost: Float
    dockerArgs: String
    env: [EnvironmentVariableInput]
    gpuCount: Int
    gpuTypeId: String
    gpuTypeIdList: [String]
    imageName: String
    minDisk: Int
    minDownload: Int
    minMemoryInGb: Int
    minUpload: Int
    minVcpuCount: Int
    name: String
    networkVolumeId: String
    port: Int
    ports: String
    startJupyter: Boolean
    startSsh: Boolean
    supportPublicIp: Boolean
    templateId: String
    volumeInGb: Int
    volumeKey: String
    volumeMountPath: String
    dataCenterId: String
    cudaVersion: String
    allowedCudaVersions: [String]
    minCudaVersion: String
    instanceIds: [String]
    computeType: ComputeType
    globalNetwork: Boolean
  }

  "instanceId: <flavor>-<vcpus>-<memoryGb>, e.g. cpu3c-2-4; the smallest cpu3c when omitted."
  input deployCpuPodInput {
    instanceId: String
    cloudType: CloudTypeEnum
    containerDiskInGb: Int = 10
    containerRegistryAuthId: String
    countryCode: String
    deployCost: Float
    dockerArgs: String
    env: [EnvironmentVariableInput]
    imageName: String
    minDisk: Int
    minDownload: Int
    minUpload: Int
    name: String
    networkVolumeId: String
    ports: String
    startJupyter: Boolean
    startSsh: Boolean
    supportPublicIp: Boolean
    templateId: String
    volumeKey: String
    volumeMountPath: String
    dataCenterId: String
  }

  input PodEditJobInput {
    podId: String!
    dockerArgs: String
    imageName: String!
    env: [EnvironmentVariableInput]
    port: Int
    ports: String
    containerDiskInGb: Int!
    volumeInGb: Int
    volumeMountPath: String
    containerRegistryAuthId: String
  }

  input PodStopInput {
    podId: String!
  }

  input PodResumeInput {
    podId: String!
    gpuCount: Int!
  }

  input PodRestartInput {
    podId: String!
  }

  input PodResetInput {
    podId: String!
  }

  input PodTerminateInput {
    podId: String!
  }

  input UpdateEndpointTemplateInput {
    endpointId: String!
    templateId: String!
  }

  input UpdateUserSettingsInput {
    pubKey: String
  }

  type Mutation {
    secretCreate(input: SecretCreateInput!): Secret
    "Rotates the value; workers started afterwards get the new one."
    secretValueUpdate(input: SecretValueUpdateInput!): Secret
    secretDescriptionUpdate(input: SecretDescriptionUpdateInput!): Secret
    "Answers null."
    secretDelete(id: ID!): Boolean
    "Rents a GPU pod of gpuTypeId (or the first of gpuTypeIdList on offer); it starts RUNNING."
    podFindAndDeployOnDemand(input: PodFindAndDeployOnDemandInput): Pod
    "Rents a CPU pod; it starts RUNNING."
    deployCpuPod(input: deployCpuPodInput!): Pod
    "New image, command, env, ports or disks: a reset. volumeInGb only grows."
    podEditJob(input: PodEditJobInput!): Pod
    "RUNNING -> EXITED; refused while locked."
    podStop(input: PodStopInput!): Pod
    "EXITED -> RUNNING with gpuCount GPUs (ignored for CPU pods)."
    podResume(input: PodResumeInput!): Pod
    "Only a RUNNING pod restarts."
    podRestart(input: PodRestartInput!): Pod
    "Resets the container and starts the pod; refused while locked."
    podReset(input: PodResetInput!): Pod
    "The pod is gone; answers null."
    podTerminate(input: PodTerminateInput!): Boolean
    "Points an endpoint at another template: a new release, other settings unchanged."
    updateEndpointTemplate(input: UpdateEndpointTemplateInput!): Endpoint
    updateUserSettings(input: UpdateUserSettingsInput!): User
    saveEndpoint(input: EndpointInput!): Endpoint
    "Answers null; refused unless workersMin = workersMax = 0."
    deleteEndpoint(id: String!): Boolean
    saveTemplate(input: SaveTemplateInput!): PodTemplate
    "Deletes BY NAME."
    deleteTemplate(templateName: String!): Boolean
    createNetworkVolume(input: CreateNetworkVolumeInput!): NetworkVolume
    updateNetworkVolume(input: UpdateNetworkVolumeInput!): NetworkVolume
    deleteNetworkVolume(input: DeleteNetworkVolumeInput!): Boolean
    saveRegistryAuth(input: SaveRegistryAuthInput!): ContainerRegistryAuth
    updateRegistryAuth(input: UpdateRegistryAuthInput!): ContainerRegistryAuth
    deleteRegistryAuth(registryAuthId: String!): Boolean
  }
`;
