import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BUILTIN_HANDLERS } from "../../../service/jobs/workers/handlers";
import {
  imageBase,
  Launcher,
  launchSpecOf,
  parseHandlerFlag,
  relativeFilesIn,
  splitPathsIn,
} from "../../../service/jobs/workers/launch";
import { exceptionBody, isStream, resultBody, serialise } from "../../../service/jobs/workers/runtime/result";

describe("handler configuration", () => {
  it("reads a target as a module (one path with a JS/TS extension) or a command line", () => {
    expect(launchSpecOf("./handlers/echo.ts")).toEqual({ kind: "module", module: "./handlers/echo.ts" });
    expect(launchSpecOf("/abs/worker.mjs")).toEqual({ kind: "module", module: "/abs/worker.mjs" });
    expect(launchSpecOf("python3 -u handler.py")).toEqual({
      kind: "command",
      command: "python3 -u handler.py",
    });
    expect(launchSpecOf("./start.sh")).toEqual({ kind: "command", command: "./start.sh" });
    expect(launchSpecOf("module:./odd name.js")).toEqual({ kind: "module", module: "./odd name.js" });
    expect(launchSpecOf("cmd:node worker.js")).toEqual({ kind: "command", command: "node worker.js" });
  });

  it("reads a module path with a space as a module when that file is there, whole", () => {
    const base = mkdtempSync(join(tmpdir(), "runpodkit launch-"));
    try {
      mkdirSync(join(base, "my handlers"));
      writeFileSync(join(base, "my handlers", "w.mjs"), "export const handler = () => 1;\n");
      expect(launchSpecOf("./my handlers/w.mjs", base)).toEqual({
        kind: "module",
        module: "./my handlers/w.mjs",
      });
      expect(launchSpecOf(join(base, "my handlers", "w.mjs"))).toEqual({
        kind: "module",
        module: join(base, "my handlers", "w.mjs"),
      });
      // A command ending in a module's name, and a path with a space that names no file: command lines.
      expect(launchSpecOf("node w.mjs", base)).toEqual({ kind: "command", command: "node w.mjs" });
      expect(launchSpecOf("./my handlers/gone.mjs", base)).toEqual({
        kind: "command",
        command: "./my handlers/gone.mjs",
      });
      const warnings: string[] = [];
      const launcher = new Launcher({ "acme/w": "./my handlers/w.mjs" }, (m) => warnings.push(m), base);
      expect(launcher.resolve("acme/w:1").spec).toEqual({
        kind: "module",
        module: join(base, "my handlers", "w.mjs"),
      });
      // It said to quote the path as a command line, which ran the module file as a program.
      expect(warnings).toEqual([]);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  it("parses --handler <image>=<module-or-command> at the first =", () => {
    expect(parseHandlerFlag("acme/sd:1.0=python3 h.py --x=1")).toEqual(["acme/sd:1.0", "python3 h.py --x=1"]);
    expect(() => parseHandlerFlag("no-equals")).toThrow(/<image>=<module-or-command>/);
    expect(() => parseHandlerFlag("=x")).toThrow();
  });

  it("strips tags and digests from image names, not registry ports", () => {
    expect(imageBase("acme/sd:1.0")).toBe("acme/sd");
    expect(imageBase("registry.local:5000/acme/sd")).toBe("registry.local:5000/acme/sd");
    expect(imageBase("registry.local:5000/acme/sd:2@sha256:abc")).toBe("registry.local:5000/acme/sd");
  });

  it("resolves configured images first (exact, then without tag), then built-ins, else echo with one warning", () => {
    const warnings: string[] = [];
    const launcher = new Launcher(
      { "acme/sd": "python3 h.py", "acme/sd:beta": "./beta.ts" },
      (m) => warnings.push(m),
      "/base",
    );
    // A module target with no file is named at once (the CLI refuses it: test/e2e/installed-handlers.test.ts).
    expect(warnings.splice(0)).toEqual([
      'handler of image "acme/sd:beta": /base/beta.ts does not exist; its workers fail until it does',
    ]);
    expect(launcher.resolve("acme/sd:1.0").spec).toEqual({ kind: "command", command: "python3 h.py" });
    expect(launcher.resolve("acme/sd:beta").spec).toEqual({ kind: "module", module: "/base/beta.ts" });
    expect(launcher.resolve("runpodkit/stream:latest").spec).toEqual({
      kind: "module",
      module: BUILTIN_HANDLERS["runpodkit/stream"],
    });
    const unknown = launcher.resolve("other/thing");
    expect(unknown).toEqual({
      spec: { kind: "module", module: BUILTIN_HANDLERS["runpodkit/echo"] },
      fallback: true,
    });
    launcher.resolve("other/thing");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("--handler other/thing=");
  });
});

describe("command lines naming files by relative paths", () => {
  it("finds the words that are files relative to the service's directory, and warns of each, naming the absolute path", () => {
    const base = mkdtempSync(join(tmpdir(), "runpodkit-launch-"));
    try {
      mkdirSync(join(base, "src"));
      writeFileSync(join(base, "handler.py"), "");
      writeFileSync(join(base, "src", "main.py"), "");
      expect(relativeFilesIn("python3 handler.py", base)).toEqual(["handler.py"]);
      expect(relativeFilesIn("python3 -u src/main.py --rp_log_level=DEBUG", base)).toEqual(["src/main.py"]);
      expect(relativeFilesIn("cd /srv && python3 ./handler.py", base)).toEqual(["./handler.py"]);
      // Absolute, expanded by the worker's shell, not a file there, a module name, an option: none.
      expect(relativeFilesIn(`python3 ${join(base, "handler.py")}`, base)).toEqual([]);
      expect(relativeFilesIn('python3 "$PWD/handler.py"', base)).toEqual([]);
      expect(relativeFilesIn("python3 other.py", base)).toEqual([]);
      expect(relativeFilesIn("python3 -m src", base)).toEqual([]);

      const warnings: string[] = [];
      new Launcher(
        { "acme/py": "python3 -u handler.py", "acme/abs": `python3 ${join(base, "handler.py")}` },
        (m) => warnings.push(m),
        base,
      );
      expect(warnings).toEqual([
        `handler of image "acme/py": the command names handler.py by a relative path, but a command runs in its worker's own directory, where there is no such file: name it ${join(base, "handler.py")} (in your shell, --handler "acme/py=python3 -u '$PWD/handler.py'")`,
      ]);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('a path with a space given unquoted ("python3 $PWD/h.py" in such a directory) is named at start, with the quoted fix', () => {
    // The docs' `"python3 $PWD/..."` in /home/jo doe/proj: the worker's shell ran `python3 /home/jo`,
    // and every worker failed ("can't open file '/home/jo'") with nothing said at start.
    const base = mkdtempSync(join(tmpdir(), "runpodkit launch "));
    try {
      mkdirSync(join(base, "my handlers"));
      writeFileSync(join(base, "my handlers", "h.py"), "");
      const file = join(base, "my handlers", "h.py");
      expect(splitPathsIn(`python3 -u ${file} --rp_log_level=DEBUG`, base)).toEqual([
        { words: file, path: file },
      ]);
      expect(splitPathsIn("python3 my handlers/h.py", base)).toEqual([
        { words: "my handlers/h.py", path: file },
      ]);
      // Quoted (as the docs now write it), a variable for the worker's shell, an operator between: none.
      expect(splitPathsIn(`python3 '${file}'`, base)).toEqual([]);
      expect(splitPathsIn(`python3 "${file}"`, base)).toEqual([]);
      expect(splitPathsIn('python3 "$HOME/my handlers/h.py"', base)).toEqual([]);
      const [head, ...tail] = base.split(" ");
      expect(splitPathsIn(`ls ${head}; ls ${tail.join(" ")}`, base)).toEqual([]);
      // A directory too: `cd` into it splits the same way.
      expect(splitPathsIn(`cd ${base} && python3 -V`, base)).toEqual([{ words: base, path: base }]);

      const warnings: string[] = [];
      new Launcher(
        { "acme/py": `python3 ${file}`, "acme/ok": `python3 '${file}'` },
        (m) => warnings.push(m),
        base,
      );
      expect(warnings).toEqual([
        `handler of image "acme/py": the command names ${file} unquoted, and its shell splits the path at the space (its workers would be given ${base.split(" ")[0]}): quote it in the command line, --handler "acme/py=python3 '${file}'"`,
      ]);
      // The relative-path warning's fix is quoted too: the directory holds a space.
      const relative: string[] = [];
      new Launcher({ "acme/rel": "python3 h.py" }, (m) => relative.push(m), join(base, "my handlers"));
      expect(relative).toEqual([
        `handler of image "acme/rel": the command names h.py by a relative path, but a command runs in its worker's own directory, where there is no such file: name it '${file}' (in your shell, --handler "acme/rel=python3 '$PWD/h.py'")`,
      ]);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});

describe("worker runtime result mapping (as the real worker library)", () => {
  it("wraps values; keeps dicts under output; error and refresh_worker are lifted out", () => {
    expect(resultBody("text")).toEqual({ output: "text" });
    expect(resultBody(null)).toEqual({ output: null });
    expect(resultBody([1])).toEqual({ output: [1] });
    expect(resultBody({ output: 1 })).toEqual({ output: { output: 1 } });
    expect(resultBody({})).toEqual({});
    expect(resultBody({ error: "bad", partial: 1 })).toEqual({ error: "bad", output: { partial: 1 } });
    expect(resultBody({ refresh_worker: true, x: 1 })).toEqual({ output: { x: 1 }, stopPod: true });
    expect(resultBody({ error: "", x: 1 })).toEqual({ output: { x: 1 } });
  });

  it("an exception becomes a JSON string with the library's fields", () => {
    const body = exceptionBody(new TypeError("nope"), "w1");
    expect(JSON.parse(body.error as string)).toMatchObject({
      error_type: "<class 'TypeError'>",
      error_message: "nope",
      worker_id: "w1",
      runpod_version: expect.any(String),
    });
  });

  it("tells streams from values, and turns an unserialisable output into an error", () => {
    expect(isStream((function* () {})())).toBe(true);
    expect(isStream((async function* () {})())).toBe(true);
    expect(isStream([1, 2])).toBe(false);
    expect(isStream("abc")).toBe(false);
    expect(JSON.parse(serialise({ output: { n: 1n } }))).toEqual({
      error: expect.stringContaining("not JSON-serialisable"),
    });
  });
});
