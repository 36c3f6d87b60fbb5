import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestService, withService } from "../../helpers/service";

/*
 * The official Python library's GraphQL management helpers (runpod.api.ctl_commands), against this
 * service. The library builds each document with its values written inline and posts `{"query": ...}`
 * with a Bearer key and no variables; the builders below produce the same documents for the same
 * arguments (field order, literal quirks such as `containerRegistryAuthId : ""`, enum literals,
 * `dataCenterId: null`, scalar `env` on pods), and each test reads the reply the way the helper does.
 */

let service: TestService;

interface PythonReply {
  status: number;
  data: Record<string, unknown> | null;
  errors?: { message: string }[];
}

/** run_graphql_query: POST {query}, Bearer key, the library's headers; errors raise QueryError. */
async function runGraphqlQuery(query: string, key = service.apiKey): Promise<PythonReply> {
  const response = await fetch(service.graphqlUrl, {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      "User-Agent": "RunPod-Python-SDK/1.12.0 (Linux 6.1; x86_64) Language/Python 3.11.9",
      Authorization: `Bearer ${key}`,
    },
    body: JSON.stringify({ query }),
  });
  const body = (await response.json()) as {
    data: Record<string, unknown> | null;
    errors?: { message: string }[];
  };
  return { status: response.status, ...body };
}

/** As the library: any `errors` in the reply raises. */
async function helper(query: string): Promise<Record<string, unknown>> {
  const reply = await runGraphqlQuery(query);
  expect(reply.status).toBe(200);
  expect(reply.errors).toBeUndefined();
  return reply.data ?? {};
}

const quoted = (value: string) => `"${value}"`;

// ---- documents as the library builds them ------------------------------------------------------

/** mutations/templates.py generate_pod_template (create_template). */
function createTemplateDoc(a: {
  name: string;
  imageName: string;
  dockerStartCmd?: string;
  containerDiskInGb?: number;
  volumeInGb?: number;
  volumeMountPath?: string;
  ports?: string;
  env?: Record<string, string>;
  isServerless?: boolean;
  registryAuthId?: string;
}): string {
  const fields = [`name: ${quoted(a.name)}`, `imageName: ${quoted(a.imageName)}`];
  fields.push(
    a.dockerStartCmd !== undefined
      ? `dockerArgs: ${quoted(a.dockerStartCmd.replaceAll('"', '\\"'))}`
      : 'dockerArgs: ""',
  );
  fields.push(`containerDiskInGb: ${a.containerDiskInGb ?? 10}`);
  fields.push(`volumeInGb: ${a.volumeInGb ?? 0}`);
  if (a.volumeMountPath !== undefined) fields.push(`volumeMountPath: ${quoted(a.volumeMountPath)}`);
  fields.push(a.ports !== undefined ? `ports: ${quoted(a.ports.replaceAll(" ", ""))}` : 'ports: ""');
  fields.push(
    a.env !== undefined
      ? `env: [${Object.entries(a.env)
          .map(([k, v]) => `{ key: "${k}", value: "${v}" }`)
          .join(", ")}]`
      : "env: []",
  );
  fields.push(`isServerless: ${a.isServerless ? "true" : "false"}`);
  fields.push(
    a.registryAuthId !== undefined
      ? `containerRegistryAuthId : ${quoted(a.registryAuthId)}`
      : 'containerRegistryAuthId : ""',
  );
  fields.push("startSsh: true", "isPublic: false", 'readme: ""');
  return `
    mutation {
        saveTemplate(
            input: {
                ${fields.join(", ")}
            }
        ) {
            id
            name
            imageName
            dockerArgs
            containerDiskInGb
            volumeInGb
            volumeMountPath
            ports
            env {
                key
                value
            }
            isServerless
        }
    }
    `;
}

/** mutations/endpoints.py generate_endpoint_mutation (create_endpoint). */
function createEndpointDoc(a: {
  name: string;
  templateId: string;
  gpuIds?: string;
  networkVolumeId?: string;
  locations?: string;
  idleTimeout?: number;
  scalerType?: string;
  scalerValue?: number;
  workersMin?: number;
  workersMax?: number;
  flashboot?: boolean;
  allowedCudaVersions?: string;
  gpuCount?: number;
}): string {
  const fields: string[] = [];
  if (a.flashboot) fields.push("flashBootType: FLASHBOOT");
  fields.push(`name: ${quoted(a.name)}`, `templateId: ${quoted(a.templateId)}`);
  fields.push(`gpuIds: ${quoted(a.gpuIds ?? "AMPERE_16")}`);
  fields.push(`networkVolumeId: ${quoted(a.networkVolumeId ?? "")}`);
  fields.push(`locations: ${quoted(a.locations ?? "")}`);
  fields.push(`idleTimeout: ${a.idleTimeout ?? 5}`);
  fields.push(`scalerType: ${quoted(a.scalerType ?? "QUEUE_DELAY")}`);
  fields.push(`scalerValue: ${a.scalerValue ?? 4}`);
  fields.push(`workersMin: ${a.workersMin ?? 0}`);
  fields.push(`workersMax: ${a.workersMax ?? 3}`);
  if (a.allowedCudaVersions) fields.push(`allowedCudaVersions: ${quoted(a.allowedCudaVersions)}`);
  if (a.gpuCount !== undefined) fields.push(`gpuCount: ${a.gpuCount}`);
  return `
    mutation {
        saveEndpoint(
            input: {
                ${fields.join(", ")}
            }
        ) {
            id
            name
            templateId
            gpuIds
            networkVolumeId
            locations
            idleTimeout
            scalerType
            scalerValue
            workersMin
            workersMax
            allowedCudaVersions
            gpuCount
            flashBootType
        }
    }
    `;
}

/** mutations/endpoints.py update_endpoint_template_mutation. */
const updateEndpointTemplateDoc = (endpointId: string, templateId: string) => `
    mutation {
        updateEndpointTemplate(input: {templateId: "${templateId}", endpointId: "${endpointId}"}) {
            id
            templateId
        }
    }
    `;

/** queries/endpoints.py QUERY_ENDPOINT (get_endpoints). */
const QUERY_ENDPOINT = `
query Query {
  myself {
    endpoints {
      aiKey
      gpuIds
      id
      idleTimeout
      name
      networkVolumeId
      locations
      scalerType
      scalerValue
      templateId
      type
      userId
      version
      workersMax
      workersMin
      workersStandby
      gpuCount
      env {
        key
        value
      }
      createdAt
      networkVolume {
        id
        dataCenterId
      }
    }
  }
}
`;

/** queries/user.py QUERY_USER (get_user). */
const QUERY_USER = `
query myself {
    myself {
        id
        pubKey
        networkVolumes {
            id
            name
            size
            dataCenterId
        }
    }
}
`;

/** mutations/user.py generate_user_mutation (update_user_settings): newlines escaped as \n. */
const updateUserSettingsDoc = (pubKey: string) => `
    mutation {
        updateUserSettings(
            input: {
                pubKey: "${pubKey.replaceAll("\n", "\\n")}"
            }
        ) {
            id
            pubKey
        }
    }
    `;

/** mutations/container_register_auth.py generate_container_registry_auth. */
const saveRegistryAuthDoc = (name: string, username: string, password: string) => `
    mutation SaveRegistryAuth {
        saveRegistryAuth(input: {name: "${name}", username: "${username}", password: "${password}"}) {
            id
            name
        }
    }
    `;

/** mutations/container_register_auth.py update_container_registry_auth. */
const updateRegistryAuthDoc = (id: string, username: string, password: string) => `
    mutation UpdateRegistryAuth {
        updateRegistryAuth(input: {id: "${id}", username: "${username}", password: "${password}"}) {
            id
            name
        }
    }
    `;

/** mutations/container_register_auth.py delete_container_registry_auth. */
const deleteRegistryAuthDoc = (id: string) => `
    mutation DeleteRegistryAuth {
        deleteRegistryAuth(registryAuthId: "${id}")
    }
    `;

/** queries/gpus.py QUERY_GPU_TYPES (get_gpus). */
const QUERY_GPU_TYPES = `
query GpuTypes {
  gpuTypes {
    id
    displayName
    memoryInGb
  }
}
`;

/** queries/gpus.py generate_gpu_query (get_gpu). */
const gpuQueryDoc = (gpuId: string, gpuCount = 1) => `
    query GpuTypes {
      gpuTypes(input: {id: "${gpuId}"}) {
        maxGpuCount
        id
        displayName
        manufacturer
        memoryInGb
        cudaCores
        secureCloud
        communityCloud
        securePrice
        communityPrice
        oneMonthPrice
        threeMonthPrice
        oneWeekPrice
        communitySpotPrice
        secureSpotPrice
        lowestPrice(input: {gpuCount: ${gpuCount}}) {
          minimumBidPrice
          uninterruptablePrice
        }
      }
    }
    `;

/** The Pod selection of queries/pods.py (get_pods and get_pod select the same fields). */
const POD_SELECTION = (indent: string) =>
  `
            id
            containerDiskInGb
            costPerHr
            desiredStatus
            dockerArgs
            dockerId
            env
            gpuCount
            imageName
            lastStatusChange
            machineId
            memoryInGb
            name
            podType
            port
            ports
            uptimeSeconds
            vcpuCount
            volumeInGb
            volumeMountPath
            runtime {
                ports${indent}{
                    ip
                    isIpPublic
                    privatePort
                    publicPort
                    type
                }
            }
            machine {
                gpuDisplayName
            }`;

/** queries/pods.py QUERY_POD (get_pods). */
const QUERY_POD = `
query myPods {
    myself {
        pods {${POD_SELECTION("")}
        }
    }
}
`;

/** queries/pods.py generate_pod_query (get_pod). */
const podQueryDoc = (podId: string) => `
    query pod {
        pod(input: {podId: "${podId}"}) {${POD_SELECTION(" ")}
        }
    }
    `;

/**
 * mutations/pods.py generate_pod_deployment_mutation, with the arguments ctl_commands.create_pod passes
 * (its defaults: gpu_count 1, volume_in_gb 0, min_vcpu_count 1, min_memory_in_gb 1, docker_args "",
 * volume_mount_path "/runpod-volume", container_disk_in_gb 10 without a template, CPU pods on the
 * "runpod-ubuntu" template).
 */
function createPodDoc(a: {
  name: string;
  imageName?: string;
  gpuTypeId?: string;
  cloudType?: string;
  supportPublicIp?: boolean;
  startSsh?: boolean;
  dataCenterId?: string;
  countryCode?: string;
  gpuCount?: number;
  volumeInGb?: number;
  containerDiskInGb?: number;
  minVcpuCount?: number;
  minMemoryInGb?: number;
  dockerArgs?: string;
  ports?: string;
  volumeMountPath?: string;
  env?: Record<string, string>;
  templateId?: string;
  networkVolumeId?: string;
  allowedCudaVersions?: string[];
  instanceId?: string;
}): string {
  const imageName = a.imageName ?? "";
  let templateId = a.templateId;
  const containerDiskInGb = a.containerDiskInGb ?? (templateId === undefined ? 10 : undefined);
  const fields = [`name: "${a.name}"`, `imageName: "${imageName}"`, `cloudType: ${a.cloudType ?? "ALL"}`];
  if (a.startSsh ?? true) fields.push("startSsh: true");
  if (a.gpuTypeId !== undefined) {
    fields.push(`gpuTypeId: "${a.gpuTypeId}"`);
    fields.push(`supportPublicIp: ${String(a.supportPublicIp ?? true)}`);
    fields.push(`gpuCount: ${a.gpuCount ?? 1}`);
    fields.push(`volumeInGb: ${a.volumeInGb ?? 0}`);
    fields.push(`minVcpuCount: ${a.minVcpuCount ?? 1}`);
    fields.push(`minMemoryInGb: ${a.minMemoryInGb ?? 1}`);
    if (a.allowedCudaVersions !== undefined)
      fields.push(`allowedCudaVersions: [${a.allowedCudaVersions.map((v) => `"${v}"`).join(", ")}]`);
  } else {
    if (a.instanceId !== undefined) fields.push(`instanceId: "${a.instanceId}"`);
    templateId = templateId || "runpod-ubuntu";
  }
  fields.push(a.dataCenterId !== undefined ? `dataCenterId: "${a.dataCenterId}"` : "dataCenterId: null");
  fields.push(`dockerArgs: "${a.dockerArgs ?? ""}"`);
  if (a.countryCode !== undefined) fields.push(`countryCode: "${a.countryCode}"`);
  if (containerDiskInGb !== undefined) fields.push(`containerDiskInGb: ${containerDiskInGb}`);
  if (a.ports !== undefined) fields.push(`ports: "${a.ports.replaceAll(" ", "")}"`);
  fields.push(`volumeMountPath: "${a.volumeMountPath ?? "/runpod-volume"}"`);
  if (a.env !== undefined)
    fields.push(
      `env: [${Object.entries(a.env)
        .map(([k, v]) => `{ key: "${k}", value: "${v}" }`)
        .join(", ")}]`,
    );
  if (templateId !== undefined) fields.push(`templateId: "${templateId}"`);
  if (a.networkVolumeId !== undefined) fields.push(`networkVolumeId: "${a.networkVolumeId}"`);
  const mutation = a.gpuTypeId ? "podFindAndDeployOnDemand" : "deployCpuPod";
  return `
    mutation {
      ${mutation}(
        input: {
          ${fields.join(", ")}
        }
      ) {
        id
        imageName
        env
        machineId
        machine {
          podHostId
        }
      }
    }
    `;
}

/** mutations/pods.py generate_pod_stop_mutation (stop_pod). */
const podStopDoc = (podId: string) => `
    mutation {
        podStop(input: { podId: "${podId}" }) {
            id
            desiredStatus
        }
    }
    `;

/** mutations/pods.py generate_pod_resume_mutation (resume_pod). */
const podResumeDoc = (podId: string, gpuCount: number) => `
    mutation {
        podResume(input: { podId: "${podId}", gpuCount: ${gpuCount} }) {
            id
            desiredStatus
            imageName
            env
            machineId
            machine {
                podHostId
            }
        }
    }
    `;

/** mutations/pods.py generate_pod_terminate_mutation (terminate_pod). */
const podTerminateDoc = (podId: string) => `
    mutation {
        podTerminate(input: { podId: "${podId}" })
    }
    `;

beforeAll(async () => {
  service = await withService();
});
afterAll(() => service.close());

async function createVolume(name: string, dataCenterId: string): Promise<string> {
  const data = await helper(
    `mutation { createNetworkVolume(input: {name: "${name}", size: 10, dataCenterId: "${dataCenterId}"}) { id } }`,
  );
  return (data.createNetworkVolume as { id: string }).id;
}

describe("runpod (Python) GraphQL helpers: templates, endpoints, user, registry auths", () => {
  it("create_container_registry_auth, then create_template with and without registry_auth_id", async () => {
    const auth = (await helper(saveRegistryAuthDoc("py-registry", "robot", "s3cret"))).saveRegistryAuth as {
      id: string;
      name: string;
    };
    expect(auth).toEqual({ id: expect.any(String), name: "py-registry" });

    const plain = (await helper(createTemplateDoc({ name: "py-plain", imageName: "repo/app:1" })))
      .saveTemplate;
    expect(plain).toEqual({
      id: expect.any(String),
      name: "py-plain",
      imageName: "repo/app:1",
      dockerArgs: "",
      containerDiskInGb: 10,
      volumeInGb: 0,
      volumeMountPath: "/workspace",
      ports: "",
      env: [],
      isServerless: false,
    });

    const full = (
      await helper(
        createTemplateDoc({
          name: "py-full",
          imageName: "repo/worker:2",
          dockerStartCmd: "python -u handler.py",
          containerDiskInGb: 20,
          volumeInGb: 5,
          volumeMountPath: "/data",
          ports: "8888/http, 22/tcp",
          env: { MODEL: "small", MODE: "fast" },
          isServerless: true,
          registryAuthId: auth.id,
        }),
      )
    ).saveTemplate;
    expect(full).toEqual({
      id: expect.any(String),
      name: "py-full",
      imageName: "repo/worker:2",
      dockerArgs: "python -u handler.py",
      containerDiskInGb: 20,
      volumeInGb: 5,
      volumeMountPath: "/data",
      ports: "8888/http,22/tcp",
      env: [
        { key: "MODEL", value: "small" },
        { key: "MODE", value: "fast" },
      ],
      isServerless: true,
    });
  });

  it("create_template(docker_start_cmd=...) reads back the command as written, shell syntax and all", async () => {
    const commands = [
      `python -c "print(1)"`,
      `run 'it''s'`,
      "python main.py --dir $HOME",
      "echo hi && sleep 1",
      "ls *.txt",
      "x # comment",
    ];
    for (const [index, dockerStartCmd] of commands.entries()) {
      const saved = (
        await helper(createTemplateDoc({ name: `py-cmd-${index}`, imageName: "repo/app:1", dockerStartCmd }))
      ).saveTemplate as { dockerArgs: string };
      expect(saved.dockerArgs).toBe(dockerStartCmd);
    }
  });

  it("create_endpoint (networkVolumeId and locations sent as empty strings), get_endpoints, update_endpoint_template", async () => {
    const t1 = (
      await helper(createTemplateDoc({ name: "py-ep-1", imageName: "repo/w:1", isServerless: true }))
    ).saveTemplate as { id: string };
    const t2 = (
      await helper(createTemplateDoc({ name: "py-ep-2", imageName: "repo/w:2", isServerless: true }))
    ).saveTemplate as { id: string };
    const endpoint = (await helper(createEndpointDoc({ name: "py-endpoint", templateId: t1.id })))
      .saveEndpoint as Record<string, unknown>;
    expect(endpoint).toEqual({
      id: expect.any(String),
      name: "py-endpoint",
      templateId: t1.id,
      gpuIds: "AMPERE_16",
      networkVolumeId: null,
      locations: null,
      idleTimeout: 5,
      scalerType: "QUEUE_DELAY",
      scalerValue: 4,
      workersMin: 0,
      workersMax: 3,
      allowedCudaVersions: "",
      gpuCount: 1,
      flashBootType: "OFF",
    });

    const volumeId = await createVolume("py-ep-volume", "US-TX-3");
    const withVolume = (
      await helper(
        createEndpointDoc({
          name: "py-endpoint-volume",
          templateId: t1.id,
          gpuIds: "AMPERE_48",
          networkVolumeId: volumeId,
          locations: "US,FR",
          flashboot: true,
          allowedCudaVersions: "12.4",
          gpuCount: 2,
        }),
      )
    ).saveEndpoint as Record<string, unknown>;
    expect(withVolume).toMatchObject({
      networkVolumeId: volumeId,
      locations: "US,FR",
      flashBootType: "FLASHBOOT",
      allowedCudaVersions: "12.4",
      gpuCount: 2,
    });

    const moved = (await helper(updateEndpointTemplateDoc(String(endpoint.id), t2.id)))
      .updateEndpointTemplate;
    expect(moved).toEqual({ id: endpoint.id, templateId: t2.id });

    const endpoints = ((await helper(QUERY_ENDPOINT)).myself as { endpoints: Record<string, unknown>[] })
      .endpoints;
    const first = endpoints.find((e) => e.id === endpoint.id);
    expect(first).toEqual({
      aiKey: null,
      gpuIds: "AMPERE_16",
      id: endpoint.id,
      idleTimeout: 5,
      name: "py-endpoint",
      networkVolumeId: null,
      locations: null,
      scalerType: "QUEUE_DELAY",
      scalerValue: 4,
      templateId: t2.id,
      type: "QB",
      userId: expect.any(String),
      version: 1,
      workersMax: 3,
      workersMin: 0,
      workersStandby: 1,
      gpuCount: 1,
      env: [],
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      networkVolume: null,
    });
    expect(endpoints.find((e) => e.id === withVolume.id)?.networkVolume).toEqual({
      id: volumeId,
      dataCenterId: "US-TX-3",
    });
  });

  it("update_container_registry_auth and delete_container_registry_auth", async () => {
    const auth = (await helper(saveRegistryAuthDoc("py-rotate", "robot", "old"))).saveRegistryAuth as {
      id: string;
    };
    expect((await helper(updateRegistryAuthDoc(auth.id, "robot2", "new"))).updateRegistryAuth).toEqual({
      id: auth.id,
      name: "py-rotate",
    });
    expect((await helper(deleteRegistryAuthDoc(auth.id))).deleteRegistryAuth).toBeNull();
    const again = await runGraphqlQuery(deleteRegistryAuthDoc(auth.id));
    expect(again.errors?.[0]?.message).toMatch(/not found/);
  });

  it("update_endpoint_template refuses an unknown template or endpoint (the helper would raise)", async () => {
    const reply = await runGraphqlQuery(updateEndpointTemplateDoc("nope", "nope"));
    expect(reply.errors?.[0]?.message).toMatch(/endpoint nope not found/);
  });

  it("get_user and update_user_settings (a multi-line pubKey, newlines escaped by the library)", async () => {
    const volumeId = await createVolume("py-user-volume", "US-TX-3");
    const before = (await helper(QUERY_USER)).myself as {
      id: string;
      pubKey: string;
      networkVolumes: unknown[];
    };
    expect(before.pubKey).toBe("");
    expect(before.networkVolumes).toContainEqual({
      id: volumeId,
      name: "py-user-volume",
      size: 10,
      dataCenterId: "US-TX-3",
    });
    const keys = "ssh-ed25519 AAAAC3Nza one@host\nssh-rsa AAAAB3Nza two@host";
    const updated = (await helper(updateUserSettingsDoc(keys))).updateUserSettings;
    expect(updated).toEqual({ id: before.id, pubKey: keys });
    expect(((await helper(QUERY_USER)).myself as { pubKey: string }).pubKey).toBe(keys);
    // Per account: the other key's user has none.
    const other = await runGraphqlQuery(QUERY_USER, service.otherApiKey);
    expect(other.data?.myself).toEqual({ id: expect.any(String), pubKey: "", networkVolumes: [] });
  });
});

describe("runpod (Python) GraphQL helpers: GPUs", () => {
  it("get_gpus lists every GPU type with id, displayName and memoryInGb", async () => {
    const gpus = (await helper(QUERY_GPU_TYPES)).gpuTypes as Record<string, unknown>[];
    expect(gpus.length).toBeGreaterThan(40);
    expect(gpus).toContainEqual({ id: "NVIDIA GeForce RTX 4090", displayName: "RTX 4090", memoryInGb: 24 });
    expect(gpus).toContainEqual({ id: "NVIDIA A40", displayName: "A40", memoryInGb: 48 });
    for (const g of gpus) expect(Object.keys(g)).toEqual(["id", "displayName", "memoryInGb"]);
  });

  it("get_gpu answers one type with its prices and the lowest price for the asked count", async () => {
    const [one] = (await helper(gpuQueryDoc("NVIDIA GeForce RTX 4090"))).gpuTypes as Record<
      string,
      unknown
    >[];
    expect(one).toEqual({
      maxGpuCount: 8,
      id: "NVIDIA GeForce RTX 4090",
      displayName: "RTX 4090",
      manufacturer: "Nvidia",
      memoryInGb: 24,
      cudaCores: 16384,
      secureCloud: true,
      communityCloud: true,
      securePrice: 0.69,
      communityPrice: 0.34,
      oneMonthPrice: 0.62,
      threeMonthPrice: 0.59,
      oneWeekPrice: 0.66,
      communitySpotPrice: 0.17,
      secureSpotPrice: 0.35,
      lowestPrice: { minimumBidPrice: 0.17, uninterruptablePrice: 0.34 },
    });
    const [many] = (await helper(gpuQueryDoc("NVIDIA A40", 9))).gpuTypes as Record<string, unknown>[];
    expect(many?.lowestPrice).toEqual({ minimumBidPrice: null, uninterruptablePrice: null });
    expect((await helper(gpuQueryDoc("NVIDIA A40", 2))).gpuTypes).toMatchObject([
      { communityCloud: false, communityPrice: null, lowestPrice: { uninterruptablePrice: 0.4 } },
    ]);
  });

  it("get_gpu of an unknown id answers an empty list (the helper raises ValueError on it)", async () => {
    expect((await helper(gpuQueryDoc("NVIDIA GeForce RTX 9999"))).gpuTypes).toEqual([]);
  });
});

describe("runpod (Python) GraphQL helpers: pods", () => {
  it("create_pod (GPU) with the library's defaults, get_pods, get_pod, stop_pod, resume_pod, terminate_pod", async () => {
    const created = (
      await helper(
        createPodDoc({
          name: "py-gpu",
          imageName: "runpod/stack",
          gpuTypeId: "NVIDIA GeForce RTX 3070",
          env: { EXAMPLE_VAR: "example_value" },
          ports: "8888/http, 666/tcp",
        }),
      )
    ).podFindAndDeployOnDemand as Record<string, unknown>;
    expect(created).toEqual({
      id: expect.any(String),
      imageName: "runpod/stack",
      env: ["EXAMPLE_VAR=example_value"],
      machineId: expect.any(String),
      machine: { podHostId: expect.stringContaining(String(created.id)) },
    });
    const id = String(created.id);

    const pods = ((await helper(QUERY_POD)).myself as { pods: Record<string, unknown>[] }).pods;
    const listed = pods.find((p) => p.id === id);
    expect(listed).toEqual({
      id,
      containerDiskInGb: 10,
      costPerHr: 0.13,
      desiredStatus: "RUNNING",
      dockerArgs: "",
      dockerId: null,
      env: ["EXAMPLE_VAR=example_value"],
      gpuCount: 1,
      imageName: "runpod/stack",
      lastStatusChange: expect.stringMatching(/^Rented by User: /),
      machineId: created.machineId,
      memoryInGb: 8,
      name: "py-gpu",
      podType: "RESERVED",
      port: null,
      ports: "8888/http,666/tcp",
      uptimeSeconds: expect.any(Number),
      vcpuCount: 2,
      volumeInGb: 0,
      volumeMountPath: "/runpod-volume",
      runtime: { ports: [] },
      machine: { gpuDisplayName: "RTX 3070" },
    });
    expect((await helper(podQueryDoc(id))).pod).toEqual(listed);

    expect((await helper(podStopDoc(id))).podStop).toEqual({ id, desiredStatus: "EXITED" });
    expect(((await helper(podQueryDoc(id))).pod as { runtime: unknown }).runtime).toBeNull();
    expect((await helper(podResumeDoc(id, 2))).podResume).toEqual({
      id,
      desiredStatus: "RUNNING",
      imageName: "runpod/stack",
      env: ["EXAMPLE_VAR=example_value"],
      machineId: created.machineId,
      machine: { podHostId: expect.stringContaining(id) },
    });
    expect(((await helper(podQueryDoc(id))).pod as { gpuCount: number }).gpuCount).toBe(2);

    expect((await helper(podTerminateDoc(id))).podTerminate).toBeNull();
    expect((await helper(podQueryDoc(id))).pod).toBeNull();
    expect(
      ((await helper(QUERY_POD)).myself as { pods: { id: string }[] }).pods.map((p) => p.id),
    ).not.toContain(id);
  });

  it("create_pod (CPU): the runpod-ubuntu template by default, or instance_id, and a network volume's data center", async () => {
    const plain = (await helper(createPodDoc({ name: "py-cpu", imageName: "runpod/stack" })))
      .deployCpuPod as {
      id: string;
      imageName: string;
    };
    expect(plain.imageName).toBe("runpod/stack");
    const plainPod = (await helper(podQueryDoc(plain.id))).pod as Record<string, unknown>;
    expect(plainPod).toMatchObject({
      gpuCount: 0,
      vcpuCount: 2,
      memoryInGb: 4,
      costPerHr: 0.06,
      machine: { gpuDisplayName: null },
    });

    // image_name "" with a template: the template's image.
    const fromTemplate = (await helper(createPodDoc({ name: "py-cpu-template", instanceId: "cpu3g-4-16" })))
      .deployCpuPod as { id: string; imageName: string };
    expect(fromTemplate.imageName).toMatch(/^runpod\/base:/);
    expect((await helper(podQueryDoc(fromTemplate.id))).pod).toMatchObject({ vcpuCount: 4, memoryInGb: 16 });

    // With a network volume and no data center, the library looks the volume's data center up with get_user.
    const volumeId = await createVolume("py-pod-volume", "EU-CZ-1");
    const user = (await helper(QUERY_USER)).myself as {
      networkVolumes: { id: string; dataCenterId: string }[];
    };
    const dataCenterId = user.networkVolumes.find((v) => v.id === volumeId)?.dataCenterId;
    const withVolume = (
      await helper(
        createPodDoc({
          name: "py-cpu-volume",
          imageName: "runpod/stack",
          networkVolumeId: volumeId,
          dataCenterId,
        }),
      )
    ).deployCpuPod as { id: string };
    const rest = await fetch(`${service.restUrl}/pods/${withVolume.id}`, {
      headers: { authorization: `Bearer ${service.apiKey}` },
    });
    expect(await rest.json()).toMatchObject({
      networkVolumeId: volumeId,
      machine: { dataCenterId: "EU-CZ-1" },
    });

    // A volume in another data center than the one asked: refused (the helper raises).
    const mismatch = await runGraphqlQuery(
      createPodDoc({
        name: "py-bad",
        imageName: "runpod/stack",
        networkVolumeId: volumeId,
        dataCenterId: "US-TX-3",
      }),
    );
    expect(mismatch.errors?.[0]?.message).toMatch(/networkVolumeId: network volume .* is in EU-CZ-1/);

    for (const id of [plain.id, fromTemplate.id, withVolume.id]) await helper(podTerminateDoc(id));
  });

  it("create_pod with an unknown GPU type: get_gpu answers no type (the helper raises before deploying)", async () => {
    expect((await helper(gpuQueryDoc("NVIDIA Imaginary 1"))).gpuTypes).toEqual([]);
    const reply = await runGraphqlQuery(
      createPodDoc({ name: "x", imageName: "y", gpuTypeId: "NVIDIA Imaginary 1" }),
    );
    expect(reply.errors?.[0]?.message).toMatch(/unknown GPU type/);
  });
});
