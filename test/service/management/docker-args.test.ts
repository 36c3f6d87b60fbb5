import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { DOCKER_ARGS_MAX_LENGTH } from "../../../sdk/schemas/docker-args";
import { type TestService, withService } from "../../helpers/service";
import { clients } from "./client";

/*
 * GraphQL dockerArgs (templates and pods) is kept exactly as written, whatever it holds; REST's
 * dockerStartCmd is its argv, or `/bin/sh -c <string>` when it needs a shell. A REST dockerStartCmd
 * replaces the string. Both survive a restart, and a store written before the string was kept reads.
 */

const dir = mkdtempSync(join(tmpdir(), "runpodkit-dargs-"));
const started: TestService[] = [];
afterAll(async () => {
  for (const service of started) await service.close();
  rmSync(dir, { recursive: true, force: true });
});

async function start(data?: string) {
  const service = await withService(data === undefined ? {} : { data });
  started.push(service);
  return { service, api: clients(service) };
}

type Api = ReturnType<typeof clients>;

/** Each string as written, and the dockerStartCmd REST shows for it. */
const COMMANDS: [dockerArgs: string, dockerStartCmd: string[]][] = [
  [`python -c "print(1)"`, ["python", "-c", "print(1)"]],
  [`run 'it''s'`, ["run", "its"]],
  ["python main.py --dir $HOME", ["/bin/sh", "-c", "python main.py --dir $HOME"]],
  ["python main.py --out $HOME/out", ["/bin/sh", "-c", "python main.py --out $HOME/out"]],
  ["echo hi && sleep 1", ["/bin/sh", "-c", "echo hi && sleep 1"]],
  ["ls *.txt", ["/bin/sh", "-c", "ls *.txt"]],
  ["x # comment", ["/bin/sh", "-c", "x # comment"]],
  ["  python   -u  handler.py ", ["python", "-u", "handler.py"]],
  ["", []],
];

const SAVE = `mutation($input: SaveTemplateInput!) { saveTemplate(input: $input) { id dockerArgs } }`;

async function saveTemplate(api: Api, input: Record<string, unknown>) {
  const reply = await api.gql<{ saveTemplate: { id: string; dockerArgs: string } }>(SAVE, {
    input: { imageName: "repo/worker:1", isServerless: true, ...input },
  });
  expect(reply.body.errors, JSON.stringify(reply.body.errors)).toBeUndefined();
  return reply.body.data.saveTemplate;
}

async function templateArgs(api: Api, id: string) {
  const read = await api.gql<{ myself: { podTemplates: { id: string; dockerArgs: string }[] } }>(
    `{ myself { podTemplates { id dockerArgs } } }`,
  );
  return read.body.data.myself.podTemplates.find((t) => t.id === id)?.dockerArgs;
}

async function restStartCmd(api: Api, path: string) {
  const reply = await api.rest<{ dockerStartCmd: string[] }>("GET", path);
  expect(reply.status, reply.text).toBe(200);
  return reply.body.dockerStartCmd;
}

const POD = `id dockerArgs`;
const DEPLOY = `mutation($input: PodFindAndDeployOnDemandInput) { podFindAndDeployOnDemand(input: $input) { ${POD} } }`;

async function deployPod(api: Api, input: Record<string, unknown>) {
  const reply = await api.gql<{ podFindAndDeployOnDemand: { id: string; dockerArgs: string } }>(DEPLOY, {
    input: { name: "p", gpuTypeIdList: ["NVIDIA RTX A6000"], cloudType: "COMMUNITY", gpuCount: 1, ...input },
  });
  expect(reply.body.errors, JSON.stringify(reply.body.errors)).toBeUndefined();
  return reply.body.data.podFindAndDeployOnDemand;
}

async function podArgs(api: Api, podId: string) {
  const read = await api.gql<{ pod: { dockerArgs: string } }>(
    `query($input: PodFilter) { pod(input: $input) { dockerArgs } }`,
    { input: { podId } },
  );
  expect(read.body.errors).toBeUndefined();
  return read.body.data.pod.dockerArgs;
}

describe("GraphQL dockerArgs on templates", () => {
  it("keeps each string as written (saveTemplate's reply and podTemplates); REST shows its argv or /bin/sh -c", async () => {
    const { api } = await start();
    for (const [index, [dockerArgs, argv]] of COMMANDS.entries()) {
      const saved = await saveTemplate(api, { name: `t-${index}`, dockerArgs });
      expect(saved.dockerArgs).toBe(dockerArgs);
      expect(await templateArgs(api, saved.id)).toBe(dockerArgs);
      expect(await restStartCmd(api, `/templates/${saved.id}`)).toEqual(argv);
    }
  });

  it("saveTemplate with id replaces the string; no dockerArgs resets it to none", async () => {
    const { api } = await start();
    const { id } = await saveTemplate(api, { name: "t", dockerArgs: "echo hi && sleep 1" });
    await saveTemplate(api, { id, name: "t", dockerArgs: `python -c "print(1)"` });
    expect(await templateArgs(api, id)).toBe(`python -c "print(1)"`);
    expect(await restStartCmd(api, `/templates/${id}`)).toEqual(["python", "-c", "print(1)"]);
    await saveTemplate(api, { id, name: "t" });
    expect(await templateArgs(api, id)).toBe("");
    expect(await restStartCmd(api, `/templates/${id}`)).toEqual([]);
  });

  it("a REST dockerStartCmd replaces the string (then shown formatted); the same argv or another field keeps it", async () => {
    const { api } = await start();
    const { id } = await saveTemplate(api, { name: "t", dockerArgs: "echo hi && sleep 1" });
    const patch = async (body: Record<string, unknown>) =>
      expect((await api.rest("PATCH", `/templates/${id}`, body)).status).toBe(200);

    await patch({ imageName: "repo/worker:2" });
    expect(await templateArgs(api, id)).toBe("echo hi && sleep 1");
    await patch({ dockerStartCmd: ["/bin/sh", "-c", "echo hi && sleep 1"] });
    expect(await templateArgs(api, id)).toBe("echo hi && sleep 1");

    await patch({ dockerStartCmd: ["python", "-c", "print('it''s')", "a b"] });
    expect(await restStartCmd(api, `/templates/${id}`)).toEqual(["python", "-c", "print('it''s')", "a b"]);
    expect(await templateArgs(api, id)).toBe(`python -c "print('it''s')" 'a b'`);

    await patch({ dockerStartCmd: [] });
    expect(await templateArgs(api, id)).toBe("");
  });

  it("a REST-created template shows its argv formatted", async () => {
    const { api } = await start();
    const created = await api.rest<{ id: string }>("POST", "/templates", {
      name: "r",
      imageName: "repo/worker:1",
      dockerStartCmd: ["bash", "-c", "sleep 1 && echo hi"],
    });
    expect(created.status, created.text).toBe(200);
    expect(await templateArgs(api, created.body.id)).toBe("bash -c 'sleep 1 && echo hi'");
  });

  it(`accepts up to ${DOCKER_ARGS_MAX_LENGTH} characters and refuses more, naming dockerArgs`, async () => {
    const { api } = await start();
    const longest = `echo ${"x".repeat(DOCKER_ARGS_MAX_LENGTH - 8)} &&`;
    expect(longest).toHaveLength(DOCKER_ARGS_MAX_LENGTH);
    const saved = await saveTemplate(api, { name: "long", dockerArgs: longest });
    expect(await templateArgs(api, saved.id)).toBe(longest);
    const reply = await api.gql(SAVE, {
      input: { name: "longer", imageName: "repo/worker:1", dockerArgs: `${longest}x` },
    });
    expect(reply.body.data).toEqual({ saveTemplate: null });
    expect(reply.body.errors?.[0]?.extensions).toEqual({ code: "VALIDATION", field: "dockerArgs" });
  });
});

describe("GraphQL dockerArgs on pods", () => {
  it("deploy and podEditJob keep the string as written; REST shows its argv; a REST dockerStartCmd replaces it", async () => {
    const { api } = await start();
    const pod = await deployPod(api, { imageName: "repo/pod:1", dockerArgs: "python main.py --dir $HOME" });
    expect(pod.dockerArgs).toBe("python main.py --dir $HOME");
    expect(await podArgs(api, pod.id)).toBe("python main.py --dir $HOME");
    expect(await restStartCmd(api, `/pods/${pod.id}`)).toEqual([
      "/bin/sh",
      "-c",
      "python main.py --dir $HOME",
    ]);

    const edit = await api.gql<{ podEditJob: { dockerArgs: string } }>(
      `mutation($input: PodEditJobInput!) { podEditJob(input: $input) { dockerArgs } }`,
      { input: { podId: pod.id, imageName: "repo/pod:1", containerDiskInGb: 40, dockerArgs: `run 'it''s'` } },
    );
    expect(edit.body.errors).toBeUndefined();
    expect(edit.body.data.podEditJob.dockerArgs).toBe(`run 'it''s'`);
    expect(await restStartCmd(api, `/pods/${pod.id}`)).toEqual(["run", "its"]);

    const patched = await api.rest("PATCH", `/pods/${pod.id}`, { dockerStartCmd: ["ls", "*.txt"] });
    expect(patched.status, patched.text).toBe(200);
    expect(await podArgs(api, pod.id)).toBe("ls '*.txt'");
  });

  it("a pod deployed from a template without dockerArgs takes the template's string", async () => {
    const { api } = await start();
    const template = await saveTemplate(api, { name: "t", isServerless: false, dockerArgs: "ls *.txt" });
    const pod = await deployPod(api, { templateId: template.id });
    expect(pod.dockerArgs).toBe("ls *.txt");
    expect(await restStartCmd(api, `/pods/${pod.id}`)).toEqual(["/bin/sh", "-c", "ls *.txt"]);
  });
});

describe("dockerArgs in the store", () => {
  it("a restart on the same store file keeps every string and its argv", async () => {
    const data = join(dir, "kept.sqlite");
    const first = await start(data);
    const ids: string[] = [];
    for (const [index, [dockerArgs]] of COMMANDS.entries()) {
      ids.push((await saveTemplate(first.api, { name: `t-${index}`, dockerArgs })).id);
    }
    const pod = await deployPod(first.api, { imageName: "repo/pod:1", dockerArgs: "echo hi && sleep 1" });
    await first.service.close();

    const second = await start(data);
    for (const [index, [dockerArgs, argv]] of COMMANDS.entries()) {
      expect(await templateArgs(second.api, ids[index] ?? "")).toBe(dockerArgs);
      expect(await restStartCmd(second.api, `/templates/${ids[index]}`)).toEqual(argv);
    }
    expect(await podArgs(second.api, pod.id)).toBe("echo hi && sleep 1");
  });

  it("a store written before dockerArgs was kept reads: its commands show formatted from the argv", async () => {
    const data = join(dir, "before.sqlite");
    const first = await start(data);
    const created = await first.api.rest<{ id: string }>("POST", "/templates", {
      name: "old",
      imageName: "repo/worker:1",
      dockerStartCmd: ["python", "-c", "print(1)"],
    });
    const pod = await first.api.rest<{ id: string }>("POST", "/pods", {
      imageName: "repo/pod:1",
      gpuTypeIds: ["NVIDIA RTX A6000"],
      cloudType: "COMMUNITY",
      dockerStartCmd: ["bash", "-c", "echo hi && sleep 1"],
    });
    expect(pod.status, pod.text).toBe(200);
    await first.service.close();

    // Back to the documents the service wrote before the field and its migration existed.
    const db = new DatabaseSync(data);
    for (const table of ["mgmt_templates", "mgmt_pods"]) {
      db.exec(`UPDATE ${table} SET data = json_remove(data, '$.dockerArgs')`);
    }
    expect(db.prepare("DELETE FROM migrations WHERE name = 'management-006-docker-args'").run().changes).toBe(
      1,
    );
    const stored = db.prepare("SELECT data FROM mgmt_templates").get() as { data: string };
    expect(JSON.parse(stored.data)).not.toHaveProperty("dockerArgs");
    db.close();

    const second = await start(data);
    expect(await templateArgs(second.api, created.body.id)).toBe(String.raw`python -c print\(1\)`);
    expect(await restStartCmd(second.api, `/templates/${created.body.id}`)).toEqual([
      "python",
      "-c",
      "print(1)",
    ]);
    expect(await podArgs(second.api, pod.body.id)).toBe("bash -c 'echo hi && sleep 1'");
    // And it takes a string as written from now on.
    await saveTemplate(second.api, {
      id: created.body.id,
      name: "old",
      isServerless: false,
      dockerArgs: "echo $HOME",
    });
    expect(await templateArgs(second.api, created.body.id)).toBe("echo $HOME");
  });
});
