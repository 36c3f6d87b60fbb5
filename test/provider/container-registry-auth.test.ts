import { afterEach, beforeEach, describe, expect, test } from "vitest";
import {
  containerRegistryAuthSpec,
  createContainerRegistryAuthProvider,
} from "../../provider/container-registry-auth";
import { accountIdOf } from "../../service/edge/auth";
import { checkAndCreate, expectPlainJson, generatedNameOf, type Harness, startHarness } from "./support";

let h: Harness;
let provider: ReturnType<typeof createContainerRegistryAuthProvider>;

beforeEach(async () => {
  h = await startHarness({ deleteTimeoutMs: 10_000 });
  provider = createContainerRegistryAuthProvider(h.context);
});
afterEach(async () => {
  await h.close();
});

const CREDS = generatedNameOf(containerRegistryAuthSpec, "creds");

const up = (news: Record<string, unknown>) => checkAndCreate(provider, "creds", news);

/** What the service stored (credentials are never readable through its APIs). */
const stored = (id: string) => h.service.management.registryAuths.get(accountIdOf(h.service.apiKey), id);

describe("ContainerRegistryAuth", () => {
  test("check requires username and password and names them", async () => {
    const { failures } = await provider.check({}, { __logicalName: "c", username: "" });
    expect(failures.map((f) => f.property).sort()).toEqual(["password", "username"]);
  });

  test("create stores the credentials; outputs keep them (the service never returns them)", async () => {
    const created = await up({ username: "bot", password: "s3cret-pass" });
    expect(created.outs).toMatchObject({ name: CREDS, username: "bot", password: "s3cret-pass" });
    expectPlainJson(created.outs);
    expect(stored(created.id)).toMatchObject({ username: "bot", password: "s3cret-pass" });
    const read = await provider.read(created.id, created.outs);
    expect(read.props).toMatchObject({ name: CREDS, username: "bot", password: "s3cret-pass" });
  });

  test("new credentials update in place (GraphQL updateRegistryAuth); a new name replaces", async () => {
    const created = await up({ name: "ghcr", username: "bot", password: "s3cret-pass" });
    const rotated = (
      await provider.check(created.inputs, { name: "ghcr", username: "bot", password: "n3w-pass" })
    ).inputs;
    expect(await provider.diff(created.id, created.outs, rotated)).toEqual({
      changes: true,
      replaces: [],
      deleteBeforeReplace: false,
    });
    const updated = await provider.update(created.id, created.outs, rotated);
    expect(updated.outs).toMatchObject({ password: "n3w-pass" });
    expect(stored(created.id).password).toBe("n3w-pass");

    const renamed = (
      await provider.check(updated.outs, { name: "ghcr2", username: "bot", password: "n3w-pass" })
    ).inputs;
    expect(await provider.diff(created.id, updated.outs, renamed)).toEqual({
      changes: true,
      replaces: ["name"],
      deleteBeforeReplace: false,
    });
  });

  test("a named auth in use is renamed without downtime: new one first, templates move, old one deleted", async () => {
    const old = await up({ name: "ghcr", username: "bot", password: "s3cret-pass" });
    const template = await h.rest.templates.create({
      name: "private",
      imageName: "ghcr.io/acme/private:1",
      containerRegistryAuthId: old.id,
    });
    const news = { name: "ghcr-2", username: "bot", password: "s3cret-pass" };
    const diff = await provider.diff(old.id, old.outs, (await provider.check(old.inputs, news)).inputs);
    expect(diff).toMatchObject({ replaces: ["name"], deleteBeforeReplace: false });
    const replacement = await provider.create((await provider.check({}, news)).inputs);
    // The engine updates the template (an in-place field) to the new id, then deletes the old auth.
    await h.rest.templates.update(template.id, { containerRegistryAuthId: replacement.id });
    await provider.delete(old.id, old.outs);
    expect(h.pause.slept).toEqual([]);
    expect((await h.rest.containerRegistryAuths.list()).map((a) => a.name)).toEqual(["ghcr-2"]);
  });

  test("delete while a template uses it fails at once, naming the template; a missing one deletes fine", async () => {
    const created = await up({ username: "bot", password: "s3cret-pass" });
    const template = await h.rest.templates.create({
      name: "private",
      imageName: "ghcr.io/acme/private:1",
      containerRegistryAuthId: created.id,
    });
    const failure = provider.delete(created.id, created.outs);
    await expect(failure).rejects.toMatchObject({ code: "IN_USE" });
    await expect(failure).rejects.toThrow(`still used by template private (id ${template.id})`);
    expect(h.pause.slept).toEqual([]);
    await h.rest.templates.delete(template.id);
    await provider.delete(created.id, created.outs);
    expect((await provider.read(created.id, created.outs)).id).toBe("");
    await expect(provider.delete(created.id, created.outs)).resolves.toBeUndefined();
  });

  test("delete names a user template that is bound to an endpoint (the REST list leaves those out unless asked)", async () => {
    const created = await up({ username: "bot", password: "s3cret-pass" });
    const template = await h.rest.templates.create({
      name: "bound",
      imageName: "ghcr.io/acme/private:1",
      isServerless: true,
      containerRegistryAuthId: created.id,
    });
    await h.rest.endpoints.create({ templateId: template.id, workersMax: 0 });
    expect((await h.rest.templates.list()).map((t) => t.id)).not.toContain(template.id);
    const failure = provider.delete(created.id, created.outs);
    await expect(failure).rejects.toMatchObject({ code: "IN_USE" });
    await expect(failure).rejects.toThrow(`still used by template bound (id ${template.id})`);
  });

  test("adoption sets the desired credentials on the existing record and keeps its name", async () => {
    const existing = await h.rest.containerRegistryAuths.create({
      name: "old",
      username: "u",
      password: "old-pass",
    });
    const adopted = await up({ adoptId: existing.id, username: "bot", password: "s3cret-pass" });
    expect(adopted).toMatchObject({ id: existing.id, outs: { name: "old", username: "bot" } });
    expect(stored(existing.id)).toMatchObject({ username: "bot", password: "s3cret-pass" });
  });

  test("errors carry neither the API key nor the password", async () => {
    await h.rest.containerRegistryAuths.create({ name: "dup", username: "u", password: "p-123456" });
    const failure = up({ name: "dup", username: "bot", password: "s3cret-pass" });
    await expect(failure).rejects.toMatchObject({
      code: "NAME_TAKEN",
      operation: "create container registry auth dup",
    });
    const error = (await failure.catch((e: unknown) => e)) as Error;
    expect(error.message).not.toContain(h.settings.apiKey);
    expect(error.message).not.toContain("s3cret-pass");
  });
});
