/**
 * The engine runs the program and the provider host with the `node` found on their PATH, as the
 * Pulumi CLI does with the user's `node` (issue 8), unless the caller pins a binary. The node-version
 * fixture reports the Node.js that ran each: the lowest supported Node (the npm `node` package) first
 * on PATH, then pinned to this process's Node while PATH still names the other.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { LocalStack } from "../../engine/engine";
import { installNode } from "../../engine/package";
import { LOWEST_NODE } from "./support/node-versions";

const FIXTURE = join(__dirname, "fixtures", "node-version");
const TIMEOUT = 180_000;

describe("the engine's node", () => {
  let root = "";
  let lowest = "";

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "runpodkit-engine-node-"));
    lowest = await installNode(LOWEST_NODE);
  }, TIMEOUT);

  afterAll(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  const open = (stackName: string, node?: string) =>
    LocalStack.open({
      programDir: FIXTURE,
      stackName,
      stateDir: join(root, "state"),
      passphrase: "correct horse battery staple",
      // The lowest Node first on PATH, the rest of PATH after it.
      env: {
        PATH: [dirname(lowest), process.env.PATH ?? ""].join(delimiter),
        PULUMI_NODEJS_TRANSPILE_ONLY: "true",
      },
      ...(node ? { node } : {}),
    });

  test(
    "by default the program and the provider host run on the `node` first on PATH",
    async () => {
      const stack = await open("on-path");
      expect(stack.node()).toBe(lowest);
      const { outputs } = await stack.up();
      expect(outputs.programNode?.value).toBe(`v${LOWEST_NODE}`);
      expect(outputs.hostNode?.value).toBe(`v${LOWEST_NODE}`);
      expect(outputs.programExecPath?.value).toBe(lowest);
      expect(outputs.hostExecPath?.value).toBe(lowest);
      expect(process.version).not.toBe(`v${LOWEST_NODE}`);
      await stack.destroy();
    },
    TIMEOUT,
  );

  test(
    "a pinned node runs both whatever PATH holds",
    async () => {
      const stack = await open("pinned", process.execPath);
      const { outputs } = await stack.up();
      expect(outputs.programNode?.value).toBe(process.version);
      expect(outputs.hostNode?.value).toBe(process.version);
      expect(outputs.hostExecPath?.value).toBe(process.execPath);
      await stack.destroy();
    },
    TIMEOUT,
  );

  test("no node on PATH and none pinned fails naming the cause", async () => {
    const stack = await LocalStack.open({
      programDir: FIXTURE,
      stackName: "no-node",
      stateDir: join(root, "state"),
      passphrase: "x",
      env: { PATH: root },
    });
    expect(() => stack.node()).toThrow(/no `node` on PATH/);
    await expect(stack.up()).rejects.toMatchObject({ code: "NODE_NOT_FOUND" });
  });
});
