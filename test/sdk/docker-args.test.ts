import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  DockerArgsError,
  dockerStartCmdOf,
  formatDockerArgs,
  parseDockerArgs,
} from "../../sdk/schemas/docker-args";

describe("dockerArgs <-> dockerStartCmd", () => {
  it("a quoted argument stays one argument, and formats back to a string that parses the same", () => {
    const argv = parseDockerArgs(`bash -c "sleep 1 && echo hi"`);
    expect(argv).toEqual(["bash", "-c", "sleep 1 && echo hi"]);
    const text = formatDockerArgs(argv);
    expect(text).toBe(`bash -c 'sleep 1 && echo hi'`);
    expect(parseDockerArgs(text)).toEqual(argv);
  });

  it.each([
    ["", []],
    ["   ", []],
    ["python  -u\thandler.py", ["python", "-u", "handler.py"]],
    [`echo 'it''s' "a \\"b\\""`, ["echo", "its", 'a "b"']],
    [`sh -c 'echo $HOME | wc -c'`, ["sh", "-c", "echo $HOME | wc -c"]],
    [`run --name=x\\ y ''`, ["run", "--name=x y", ""]],
    [`a\\#b "*.txt" '?'`, ["a#b", "*.txt", "?"]],
  ])("parses %j", (text, argv) => {
    expect(parseDockerArgs(text)).toEqual(argv);
    expect(parseDockerArgs(formatDockerArgs(argv))).toEqual(argv);
  });

  it.each([
    ["cd /app && python serve.py", "shell operator && outside quotes"],
    ["cat log | grep x", "shell operator | outside quotes"],
    ["a; b", "shell operator ; outside quotes"],
    ["serve > out.log", "shell operator > outside quotes"],
    ["python train.py --data $DATA_DIR", "variable $DATA_DIR outside single quotes"],
    [`echo "$HOME/x"`, "variable $HOME outside single quotes"],
    ["ls *.txt", "unquoted glob *.txt"],
    ["serve # the server", "a comment (# the server)"],
  ])("refuses %j, naming dockerArgs", (text, reason) => {
    let caught: unknown;
    try {
      parseDockerArgs(text);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(DockerArgsError);
    expect((caught as DockerArgsError).field).toBe("dockerArgs");
    expect((caught as DockerArgsError).message).toContain(`dockerArgs: ${reason}`);
  });

  it("dockerStartCmdOf: the argv of a plain one, /bin/sh -c and the whole string for one that needs a shell", () => {
    expect(dockerStartCmdOf(`python -c "print(1)"`)).toEqual(["python", "-c", "print(1)"]);
    expect(dockerStartCmdOf("")).toEqual([]);
    for (const text of ["a && b", "run $HOME", "ls *.txt", "x # comment", " echo 'a' ; b "]) {
      expect(dockerStartCmdOf(text)).toEqual(["/bin/sh", "-c", text]);
    }
  });

  it("arguments the library's own quoting would not read back are single-quoted", () => {
    for (const argv of [["*"], ["?"], ["`'"], ["'`"], ["a'b", ""]]) {
      const text = formatDockerArgs(argv);
      expect(parseDockerArgs(text)).toEqual(argv);
    }
    expect(formatDockerArgs(["*"])).toBe("'*'");
  });

  it("property: any argv formats to a string that parses back to the same argv", () => {
    const special = fc.constantFrom(..." \t\n'\"\\$`*?[]{}()<>|&;#~!=%a1-_./:@,".split(""));
    const arg = fc.oneof(fc.string({ unit: special }), fc.string({ unit: "grapheme" }), fc.string());
    fc.assert(
      fc.property(fc.array(arg, { maxLength: 8 }), (argv) => {
        expect(parseDockerArgs(formatDockerArgs(argv))).toEqual(argv);
      }),
      { numRuns: 2_000 },
    );
  });
});
