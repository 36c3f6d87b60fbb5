import { describe, expect, it } from "vitest";
import { openDatabase } from "../../../service/db";
import { managementMigrations } from "../../../service/management/store/migrations";

const BACKFILL = "management-004-template-start-volume-storage";

describe("management migrations", () => {
  it("adds startSsh/startJupyter/startScript to stored templates and storageType to volumes, keeping set values", () => {
    const before = managementMigrations.filter((m) => m.name !== BACKFILL);
    expect(before).toHaveLength(managementMigrations.length - 1);
    const db = openDatabase(":memory:", before);
    const put = (table: string, id: string, doc: object, name?: string) =>
      db
        .prepare(
          name === undefined
            ? `INSERT INTO ${table} (account_id, id, created_at, data) VALUES ('a', ?, 0, ?)`
            : `INSERT INTO ${table} (account_id, id, name, created_at, data) VALUES ('a', ?, '${name}', 0, ?)`,
        )
        .run(id, JSON.stringify({ id, ...doc }));
    put("mgmt_templates", "t-old", { imageName: "x" }, "old");
    put("mgmt_templates", "t-set", { startSsh: true, startJupyter: false }, "set");
    put("mgmt_network_volumes", "v-old", { size: 1 });
    put("mgmt_network_volumes", "v-set", { size: 1, storageType: "VAST" });
    for (const migration of managementMigrations.filter((m) => m.name === BACKFILL)) db.exec(migration.sql);
    const docs = (table: string) =>
      Object.fromEntries(
        (db.prepare(`SELECT id, data FROM ${table} ORDER BY id`).all() as { id: string; data: string }[]).map(
          (row) => [row.id, JSON.parse(row.data)],
        ),
      );
    expect(docs("mgmt_templates")).toEqual({
      "t-old": { id: "t-old", imageName: "x", startSsh: false, startJupyter: false, startScript: "" },
      "t-set": { id: "t-set", startSsh: true, startJupyter: false, startScript: "" },
    });
    expect(docs("mgmt_network_volumes")).toEqual({
      "v-old": { id: "v-old", size: 1, storageType: "MOOSE_FS" },
      "v-set": { id: "v-set", size: 1, storageType: "VAST" },
    });
    db.close();
  });
});
