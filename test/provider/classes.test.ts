import * as pulumi from "@pulumi/pulumi";
import { beforeAll, describe, expect, test, vi } from "vitest";
import { ContainerRegistryAuth, Endpoint, NetworkVolume, Template } from "../../index";
import { ENDPOINT_OUTPUTS } from "../../provider/endpoint";
import { TEMPLATE_OUTPUTS } from "../../provider/template";

/**
 * The Resource classes inside a Pulumi program, with Pulumi's own mocks standing in for the engine:
 * the type tokens, the inputs they register (logical name for auto-naming, the serialized provider),
 * secrets, and get() as a read by id.
 */
interface Registered {
  type: string;
  name: string;
  inputs: Record<string, unknown>;
  id: string | undefined;
}
const registered: Registered[] = [];

beforeAll(async () => {
  await pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        registered.push({ type: args.type, name: args.name, inputs: args.inputs, id: args.id });
        return { id: args.id ?? `${args.name}-id`, state: { ...args.inputs, url: "https://queue/v2/x" } };
      },
      call: () => ({}),
    },
    "project",
    "stack",
    false,
  );
});

/** The value an Output resolves to. */
function resolved<T>(output: pulumi.Output<T>): Promise<T> {
  return new Promise((resolve) => output.apply(resolve));
}

describe("Resource classes", () => {
  test("register the dynamic type tokens with the logical name and the serialized provider", async () => {
    const endpoint = new Endpoint("api", { templateId: "t1", workersMax: 2 });
    const template = new Template("tpl", { imageName: "img:1" });
    const volume = new NetworkVolume("vol", { size: 10, dataCenterId: "EU-RO-1" });
    const creds = new ContainerRegistryAuth("creds", { username: "u", password: "p" });
    await Promise.all([endpoint, template, volume, creds].map((r) => resolved(r.urn)));
    expect(registered.map((r) => r.type).sort()).toEqual([
      "pulumi-nodejs:dynamic/runpodkit:ContainerRegistryAuth",
      "pulumi-nodejs:dynamic/runpodkit:Endpoint",
      "pulumi-nodejs:dynamic/runpodkit:NetworkVolume",
      "pulumi-nodejs:dynamic/runpodkit:Template",
    ]);
    const api = registered.find((r) => r.name === "api")!;
    expect(api.inputs).toMatchObject({ templateId: "t1", workersMax: 2, __logicalName: "api" });
    expect(String(api.inputs.__provider)).toContain("runpodkit/provider/endpoint-provider");
    // The stack scopes generated names; every output key is registered so the class exposes it.
    expect(api.inputs.__scope).toBe("project/stack");
    // Every output of the schemas is an Output member of the class.
    for (const key of ENDPOINT_OUTPUTS)
      expect(pulumi.Output.isInstance(Reflect.get(endpoint, key)), key).toBe(true);
    for (const key of TEMPLATE_OUTPUTS)
      expect(pulumi.Output.isInstance(Reflect.get(template, key)), key).toBe(true);
    expect(await resolved(endpoint.url)).toBe("https://queue/v2/x");
  });

  test("the customTimeouts option is recorded for the provider (Pulumi's host does not pass it on)", async () => {
    const timed = new Template("timed", { imageName: "img:1" }, { customTimeouts: { delete: "10m" } });
    await resolved(timed.urn);
    expect(registered.find((r) => r.name === "timed")?.inputs.__customTimeouts).toEqual({ delete: "10m" });
  });

  test("the replaceOnChanges option is recorded for the provider (Pulumi's engine cannot apply it to a dynamic resource)", async () => {
    const forced = new Endpoint(
      "forced",
      { templateId: "t1" },
      { replaceOnChanges: ["env.MODEL", "gpuIds"] },
    );
    const plain = new Endpoint("unforced", { templateId: "t1" }, { replaceOnChanges: [] });
    await Promise.all([resolved(forced.urn), resolved(plain.urn)]);
    expect(registered.find((r) => r.name === "forced")?.inputs.__replaceOnChanges).toEqual([
      "env.MODEL",
      "gpuIds",
    ]);
    expect(registered.find((r) => r.name === "unforced")?.inputs).not.toHaveProperty("__replaceOnChanges");
  });

  test("an ignoreChanges position into a string or a map, which Pulumi's engine applies as nothing, is warned about", async () => {
    const warned: string[] = [];
    // Under mocks Pulumi's log has no engine and writes to the console.
    const spy = vi.spyOn(console, "warn").mockImplementation((message: unknown) => {
      warned.push(String(message));
    });
    try {
      const endpoint = new Endpoint(
        "ignoring",
        { templateId: "t1" },
        { ignoreChanges: ["gpuIds[0]", "env[1]", "networkVolumeIds[0]", "env.KEY", "workersMax"] },
      );
      await resolved(endpoint.urn);
    } finally {
      spy.mockRestore();
    }
    expect(warned).toEqual([
      'warning: [runtime] Endpoint ignoring: ignoreChanges "gpuIds[0]" ignores nothing: gpuIds is not a list, so Pulumi\'s engine finds no value at a position in it. Ignore "gpuIds" whole.',
      'warning: [runtime] Endpoint ignoring: ignoreChanges "env[1]" ignores nothing: env is a map, so Pulumi\'s engine finds no value at a position in it. Ignore "env" whole, or one key ("env.KEY").',
    ]);
  });

  test("passwords and env are secrets in the program", async () => {
    const creds = new ContainerRegistryAuth("secret-creds", { username: "u", password: "p" });
    const template = new Template("secret-env", { imageName: "img:1", env: { TOKEN: "t" } });
    expect(await pulumi.isSecret(creds.password)).toBe(true);
    expect(await pulumi.isSecret(template.env)).toBe(true);
    expect(await pulumi.isSecret(creds.username)).toBe(false);
  });

  test("get() reads an existing resource by id", async () => {
    const found = Endpoint.get("existing", "ep123");
    expect(await resolved(found.id)).toBe("ep123");
    expect(registered.find((r) => r.name === "existing")).toMatchObject({
      type: "pulumi-nodejs:dynamic/runpodkit:Endpoint",
      id: "ep123",
    });
  });
});
