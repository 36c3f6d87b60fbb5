/**
 * The test engine on its own: a real program (the notes fixture, a dynamic resource kept as files)
 * run through preview, up, no-op up, update, refresh, replacements, deletions and destroy, with the
 * state carried from one run to the next as Pulumi would.
 */
import { randomUUID } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { LocalStack } from "../../engine/engine";
import { EngineError } from "../../engine/errors";
import { isSealed } from "../../engine/secret-box";
import type { ResourceState } from "../../engine/state";
import { isSecret } from "../../engine/values";

const FIXTURE = join(__dirname, "fixtures", "notes");
const RUN_TIMEOUT = 90_000;
const FIRST_URN = "urn:pulumi:dev::notes::fixture:index:Notebook$pulumi-nodejs:dynamic/fixture:Note::first";
const SECOND_URN = "urn:pulumi:dev::notes::pulumi-nodejs:dynamic/fixture:Note::second";

interface NoteFile {
  title: string;
  body: string;
  kind: string;
  revision: number;
}

describe("test engine on the notes fixture program", () => {
  const secretText = `secret-${randomUUID()}`;
  let root: string;
  let notesDir: string;
  let stack: LocalStack;

  const notes = (): Record<string, NoteFile> =>
    Object.fromEntries(
      readdirSync(notesDir)
        .filter((f) => f.endsWith(".json"))
        .map((f) => [
          f.replace(/\.json$/, ""),
          JSON.parse(readFileSync(join(notesDir, f), "utf8")) as NoteFile,
        ]),
    );
  const journal = (): string[] => {
    const file = join(notesDir, "journal.log");
    return existsSync(file) ? readFileSync(file, "utf8").trim().split("\n") : [];
  };
  const writeCallsSince = (start: number) =>
    stack.providerCalls.slice(start).filter((c) => ["create", "update", "delete"].includes(c.op));
  const resource = async (urn: string): Promise<ResourceState | undefined> =>
    (await stack.state()).resources.find((r) => r.urn === urn && !r.external);

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "runpodkit-engine-"));
    notesDir = join(root, "notes");
    mkdirSync(notesDir);
    stack = await LocalStack.open({
      programDir: FIXTURE,
      stackName: "dev",
      stateDir: join(root, "state"),
      passphrase: "correct horse battery staple",
      // The fixture is type-checked with the project (tsc); skip ts-node's second check to save time.
      env: { NOTES_DIR: notesDir, PULUMI_NODEJS_TRANSPILE_ONLY: "true" },
    });
    stack.setAllConfig({ secretText: { value: secretText, secret: true } });
  });

  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });

  test(
    "preview of a new stack plans every create and writes nothing",
    async () => {
      const preview = await stack.preview();
      expect(preview.changes).toEqual({ create: 4 });
      expect(writeCallsSince(0)).toEqual([]);
      expect(notes()).toEqual({});
      expect(await stack.exportState()).toBe("");
    },
    RUN_TIMEOUT,
  );

  test(
    "up creates the notes, returns the outputs and flags secret ones",
    async () => {
      const up = await stack.up();
      expect(up.changes).toEqual({ create: 4, read: 1 });
      const firstId = String(up.outputs.firstId?.value);
      expect(up.outputs.firstToken).toEqual({ value: `token-of-${firstId}`, secret: true });
      expect(up.outputs.secondBody).toEqual({ value: `after ${firstId}`, secret: false });
      expect(up.outputs.seenBody).toEqual({ value: "hello", secret: false });
      expect(Object.values(notes()).map((n) => n.title)).toEqual(expect.arrayContaining(["first", "second"]));
      expect(journal().filter((l) => l.startsWith("create"))).toHaveLength(2);
      // Children of a component carry its type in their URN.
      expect(await resource(FIRST_URN)).toMatchObject({
        id: firstId,
        parent: expect.stringContaining("Notebook"),
      });
    },
    RUN_TIMEOUT,
  );

  test("state on disk holds secrets only sealed, and nothing logs them", async () => {
    const text = await stack.exportState();
    const onDisk = JSON.parse(text) as { resources: ResourceState[] };
    const first = onDisk.resources.find((r) => r.urn === FIRST_URN && !r.external);
    // Booleans, so a failure never prints the secret it found.
    expect(text.includes(secretText)).toBe(false);
    expect(text.includes(`token-of-${first?.id}`)).toBe(false);
    expect(stack.logText().includes(secretText)).toBe(false);
    expect(isSealed(first?.inputs.secretText)).toBe(true);
    expect(isSealed(first?.outputs.secretText)).toBe(true);
    expect(isSealed(first?.outputs.token)).toBe(true);
    // The same passphrase opens it again.
    const opened = await resource(FIRST_URN);
    expect(isSecret(opened?.outputs.secretText) && opened?.outputs.secretText.value).toBe(secretText);
  });

  test(
    "a second up with nothing changed calls neither create, update nor delete",
    async () => {
      const calls = stack.providerCalls.length;
      const before = notes();
      const up = await stack.up();
      expect(up.changes).toEqual({ same: 4, read: 1 });
      expect(writeCallsSince(calls)).toEqual([]);
      expect(stack.providerCalls.slice(calls).map((c) => c.op)).toContain("diff");
      expect(notes()).toEqual(before);
    },
    RUN_TIMEOUT,
  );

  test(
    "a changed input is previewed, then updated in place",
    async () => {
      const id = (await resource(FIRST_URN))?.id;
      stack.setConfig("firstBody", { value: "changed" });
      const calls = stack.providerCalls.length;
      const preview = await stack.preview();
      expect(preview.changes).toMatchObject({ update: 1, same: 3 });
      expect(preview.steps.find((s) => s.op === "update")).toEqual({
        op: "update",
        urn: FIRST_URN,
        keys: ["body"],
      });
      expect(writeCallsSince(calls)).toEqual([]);

      const up = await stack.up();
      expect(up.changes).toEqual({ update: 1, same: 3, read: 1 });
      expect(notes()[String(id)]).toMatchObject({ body: "changed", revision: 2 });
      expect(up.outputs.firstRevision?.value).toBe(2);
      expect(up.outputs.firstId?.value).toBe(id);
    },
    RUN_TIMEOUT,
  );

  test(
    "refresh reads drift back and drops what is gone; the next up restores the program's values",
    async () => {
      const firstId = String((await resource(FIRST_URN))?.id);
      const secondId = String((await resource(SECOND_URN))?.id);
      const file = join(notesDir, `${firstId}.json`);
      writeFileSync(file, JSON.stringify({ ...notes()[firstId], body: "edited outside" }));
      rmSync(join(notesDir, `${secondId}.json`));

      const refresh = await stack.refresh();
      expect(refresh.steps).toEqual(
        expect.arrayContaining([
          { op: "update", urn: FIRST_URN, keys: ["body"] },
          { op: "delete", urn: SECOND_URN, keys: [] },
        ]),
      );
      expect((await resource(FIRST_URN))?.outputs.body).toBe("edited outside");
      expect(await resource(SECOND_URN)).toBeUndefined();

      const up = await stack.up();
      expect(up.changes).toMatchObject({ create: 1, update: 1 });
      expect(notes()[firstId]?.body).toBe("changed");
    },
    RUN_TIMEOUT,
  );

  test(
    "a refresh whose one read fails still saves what the other reads found, keeps that resource, and fails",
    async () => {
      const firstId = String((await resource(FIRST_URN))?.id);
      const secondId = String((await resource(SECOND_URN))?.id);
      const secondFile = join(notesDir, `${secondId}.json`);
      const secondBefore = await resource(SECOND_URN);
      const saved = readFileSync(secondFile, "utf8");
      writeFileSync(
        join(notesDir, `${firstId}.json`),
        JSON.stringify({ ...notes()[firstId], body: "edited again" }),
      );
      // The second note's read throws (its file is not JSON).
      writeFileSync(secondFile, "{not json");

      const failed = await stack.refresh().catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(EngineError);
      expect((failed as EngineError).message).toContain(SECOND_URN);
      // The first note's read was saved; the second kept its state as it was.
      expect((await resource(FIRST_URN))?.outputs.body).toBe("edited again");
      expect((await resource(SECOND_URN))?.outputs).toEqual(secondBefore?.outputs);

      writeFileSync(secondFile, saved);
      const up = await stack.up();
      expect(up.changes).toMatchObject({ update: 1 });
      expect(notes()[firstId]?.body).toBe("changed");
    },
    RUN_TIMEOUT,
  );

  test(
    "a replacement creates the new resource, updates dependents, then deletes the old one",
    async () => {
      const oldFirst = String((await resource(FIRST_URN))?.id);
      const secondId = String((await resource(SECOND_URN))?.id);
      stack.setConfig("firstKind", { value: "fancy" });
      const mark = journal().length;

      const up = await stack.up();
      expect(up.changes).toMatchObject({ replace: 1, update: 1 });
      const newFirst = String(up.outputs.firstId?.value);
      expect(newFirst).not.toBe(oldFirst);
      expect(journal().slice(mark)).toEqual([
        `create ${newFirst}`,
        `update ${secondId}`,
        `delete ${oldFirst}`,
      ]);
      expect(notes()[oldFirst]).toBeUndefined();
      expect(up.outputs.secondBody?.value).toBe(`after ${newFirst}`);
      expect((await stack.state()).resources.some((r) => r.pendingDelete)).toBe(false);
    },
    RUN_TIMEOUT,
  );

  test(
    "deleteBeforeReplace deletes the old resource before creating the new one",
    async () => {
      const oldSecond = String((await resource(SECOND_URN))?.id);
      stack.setConfig("secondKind", { value: "fancy" });
      stack.setConfig("secondDeleteFirst", { value: "true" });
      const mark = journal().length;

      const up = await stack.up();
      const newSecond = String(up.outputs.secondId?.value);
      expect(up.changes).toMatchObject({ replace: 1 });
      expect(journal().slice(mark)).toEqual([`delete ${oldSecond}`, `create ${newSecond}`]);
    },
    RUN_TIMEOUT,
  );

  test(
    "a resource dropped from the program is deleted",
    async () => {
      stack.setConfig("withExtra", { value: "true" });
      expect((await stack.up()).changes).toMatchObject({ create: 1 });
      const extra = Object.entries(notes()).find(([, n]) => n.title === "extra")?.[0];
      expect(extra).toBeDefined();

      stack.setConfig("withExtra", { value: "false" });
      const preview = await stack.preview();
      expect(preview.changes).toMatchObject({ delete: 1 });
      expect(notes()[String(extra)]).toBeDefined();
      const up = await stack.up();
      expect(up.changes).toMatchObject({ delete: 1 });
      expect(notes()[String(extra)]).toBeUndefined();
    },
    RUN_TIMEOUT,
  );

  test(
    "a failed check stops the update before any write and keeps the state",
    async () => {
      const before = (await stack.state()).resources;
      stack.setConfig("firstBody", { value: "invalid" });
      const calls = stack.providerCalls.length;
      const failure = await stack.up().catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(EngineError);
      expect(failure).toMatchObject({ code: "CHECK_FAILED", urn: FIRST_URN });
      expect((failure as Error).message).toContain("body must not be 'invalid'");
      expect(writeCallsSince(calls)).toEqual([]);
      expect((await stack.state()).resources.map((r) => [r.urn, r.id])).toEqual(
        expect.arrayContaining(before.map((r) => [r.urn, r.id])),
      );
      stack.setConfig("firstBody", { value: "changed" });
    },
    RUN_TIMEOUT,
  );

  test(
    "a program that fails half-way deletes nothing it did not reach",
    async () => {
      const before = (await stack.state()).resources.map((r) => r.urn).sort();
      stack.setConfig("crash", { value: "true" });
      const mark = journal().length;
      const failure = await stack.up().catch((e: unknown) => e);
      expect(failure).toMatchObject({ code: "PROGRAM_FAILED" });
      expect((failure as Error).message).toContain("the program crashed on purpose");
      expect(journal().slice(mark)).toEqual([]);
      expect((await stack.state()).resources.map((r) => r.urn).sort()).toEqual(before);
      stack.setConfig("crash", { value: "false" });
    },
    RUN_TIMEOUT,
  );

  test("a wrong passphrase cannot open the state", async () => {
    const intruder = await LocalStack.open({
      programDir: FIXTURE,
      stackName: "dev",
      stateDir: join(root, "state"),
      passphrase: "wrong",
    });
    await expect(intruder.outputs()).rejects.toMatchObject({ code: "PASSPHRASE_MISMATCH" });
  });

  test(
    "destroy deletes everything, dependents before what they depend on",
    async () => {
      const firstId = String((await resource(FIRST_URN))?.id);
      const secondId = String((await resource(SECOND_URN))?.id);
      const mark = journal().length;
      const destroy = await stack.destroy();
      expect(destroy.changes).toEqual({ delete: 4 });
      expect(journal().slice(mark)).toEqual([`delete ${secondId}`, `delete ${firstId}`]);
      expect(notes()).toEqual({});
      expect((await stack.state()).resources).toEqual([]);
      expect(await stack.outputs()).toEqual({});
    },
    RUN_TIMEOUT,
  );
});
