import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { withService } from "../../helpers/service";
import { clients } from "../management/client";

const dir = mkdtempSync(join(tmpdir(), "runpodkit-modes-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const mode = (path: string) => statSync(path).mode & 0o777;

describe("store file modes", () => {
  it("a new store is 0600 (with its WAL files) in a directory created 0700", async () => {
    const data = join(dir, "fresh", "nested", "store.sqlite");
    const service = await withService({ data });
    try {
      const api = clients(service);
      expect((await api.rest("POST", "/templates", { name: "t", imageName: "img" })).status).toBe(200);
      expect(mode(join(dir, "fresh", "nested"))).toBe(0o700);
      expect(mode(data)).toBe(0o600);
      expect(existsSync(`${data}-wal`)).toBe(true);
      expect(mode(`${data}-wal`)).toBe(0o600);
      expect(mode(`${data}-shm`)).toBe(0o600);
    } finally {
      await service.close();
    }
  });

  it("an existing world-readable store is narrowed to 0600 when opened; an existing directory is left alone", async () => {
    const shared = join(dir, "shared");
    mkdirSync(shared, { mode: 0o755 });
    chmodSync(shared, 0o755);
    const data = join(shared, "store.sqlite");
    const first = await withService({ data });
    await first.close();
    chmodSync(data, 0o644);
    writeFileSync(`${data}-wal`, "");
    chmodSync(`${data}-wal`, 0o666);

    const second = await withService({ data });
    try {
      expect(mode(data)).toBe(0o600);
      expect(mode(`${data}-wal`)).toBe(0o600);
      expect(mode(shared)).toBe(0o755);
    } finally {
      await second.close();
    }
  });
});
