/**
 * Facts the README and docs/ state that the code owns: the figures are read from the code here, so a
 * change of either side fails this test instead of leaving a newcomer with a value the code refuses.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";
import {
  containerRegistryAuthDefinition,
  containerRegistryAuthSpec,
} from "../../provider/container-registry-auth";
import { CREATE_MARK_BYTES, reservedMarkFailures } from "../../provider/create-mark";
import { CREATE_MARK, endpointDefinition, endpointSpec } from "../../provider/endpoint";
import { networkVolumeDefinition, networkVolumeSpec } from "../../provider/network-volume";
import { podDefinition, podSpec } from "../../provider/pod";
import { secretDefinition, secretSpec } from "../../provider/secret";
import { templateDefinition, templateSpec } from "../../provider/template";
import { DEFAULT_MAX_REPLY_BYTES } from "../../sdk/http";
import { JOB_LIMITS } from "../../sdk/schemas/job";
import { charsetRefusal } from "../../service/edge/body";
import { DEFAULT_JOB_PLANE_CONFIG } from "../../service/jobs/config";
import { OPENAI_WAIT_MS } from "../../service/jobs/http/openai-route";
import { DEFAULT_LOG_LIMITS } from "../../service/jobs/logs/log-book";
import { JOB_POLICY } from "../../service/jobs/policy";
import { BUILTIN_HANDLERS, FALLBACK_IMAGE } from "../../service/jobs/workers/handlers/index";

const ROOT = resolve(__dirname, "../..");
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
/** Prose as read: line breaks and indentation of a wrapped paragraph are one space. */
const flat = (text: string) => text.replace(/\s+/g, " ");

describe("figures the docs take from the code", () => {
  test("the README gives statusSync's `wait` in the unit the SDK takes (milliseconds) and its bounds", () => {
    const readme = flat(read("README.md"));
    const bullet = readme.slice(readme.indexOf("- `statusSync(id, { wait })`"));
    const { min, max, default: fallback } = JOB_LIMITS.runsyncWait;
    expect(bullet.slice(0, 400)).toContain(
      `in milliseconds, as \`runSync\`'s: ${min} to ${max}, default ${fallback}`,
    );
  });

  test("every page that lists the service's built-in images lists all of them, and the fallback", () => {
    const pages = [
      "README.md",
      "docs/installation-configuration.md",
      "docs/api-docs/template.md",
      "examples/handlers/README.md",
    ];
    const images = Object.keys(BUILTIN_HANDLERS);
    expect(images.length).toBeGreaterThanOrEqual(5);
    const missing = pages.flatMap((page) => {
      const text = flat(read(page));
      return [
        ...images.filter((image) => !text.includes(`\`${image}\``)).map((image) => `${page}: ${image}`),
        ...(text.includes(`any other image runs \`${FALLBACK_IMAGE}\``) ? [] : [`${page}: the fallback`]),
      ];
    });
    expect(missing).toEqual([]);
  });
});

describe("the README's log bounds", () => {
  test("per worker, per endpoint, characters and the late-line window are the log book's defaults", () => {
    const text = flat(read("README.md"));
    const n = (value: number) => value.toLocaleString("en-US");
    const {
      perWorker,
      perEndpoint,
      workersPerEndpoint,
      maxLineChars,
      perEndpointChars,
      totalChars,
      lateLineMs,
    } = DEFAULT_LOG_LIMITS;
    for (const fact of [
      `per worker (${n(perWorker)} lines)`,
      `per endpoint (${n(perEndpoint)} lines, ${workersPerEndpoint} workers)`,
      `at most ${perEndpointChars! / 1024 / 1024} Mi characters of messages per endpoint`,
      `${totalChars! / 1024 / 1024} Mi over all endpoints`,
      `\`maxLineChars\` (${maxLineChars / 1024} KiB)`,
      `ended at most ${lateLineMs! / 1000} s before`,
    ]) {
      expect(text, fact).toContain(fact);
    }
  });
});

describe("the worker protocol's settings", () => {
  test("each setting docs/worker-protocol.md names with its default, as `name` (value), has that default", () => {
    const text = flat(read("docs/worker-protocol.md"));
    const units: Record<string, number> = { ms: 1, s: 1_000, MB: 1024 * 1024, "": 1 };
    const config = DEFAULT_JOB_PLANE_CONFIG as unknown as Record<string, unknown>;
    const named = [...text.matchAll(/`([a-zA-Z]+)` \((\d+(?:\.\d+)?) ?(ms|s|MB|)(?: by default)?\)/g)];
    expect(named.length).toBeGreaterThanOrEqual(6);
    const wrong = named
      .filter(([, key]) => key! in config)
      .map(([, key, value, unit]) => [key!, Number(value) * units[unit!]!, config[key!]] as const)
      .filter(([, documented, actual]) => documented !== actual)
      .map(
        ([key, documented, actual]) => `${key}: the page says ${documented}, the code has ${String(actual)}`,
      );
    expect(wrong).toEqual([]);
    expect(config.workerBodyLimit).toBe(5 * JOB_POLICY.runsyncBodyBytes);
  });
});

describe("the resource pages say how a delete ends", () => {
  // The provider asks who uses a resource before waiting (implement.ts refuseIfStaying): a user that
  // stays fails the delete at once; only one on its way out is waited for, within the delete bound.
  test("a resource others use fails at once with IN_USE; a wait is bounded by customTimeouts.delete, else runpodkit:deleteTimeout", () => {
    const problems: string[] = [];
    for (const page of ["template", "network-volume", "container-registry-auth"]) {
      const text = flat(read(`docs/api-docs/${page}.md`));
      if (!/fails at once with `IN_USE`/.test(text)) problems.push(`${page}: no fail-at-once IN_USE`);
      if (/the delete is retried until the service accepts it/.test(text))
        problems.push(`${page}: "retried until accepted"`);
    }
    for (const page of ["endpoint", "template", "network-volume"]) {
      const text = flat(read(`docs/api-docs/${page}.md`));
      for (const bound of ["`customTimeouts.delete`", "`runpodkit:deleteTimeout`"]) {
        if (!text.includes(bound)) problems.push(`${page}: no ${bound}`);
      }
    }
    // The undo puts back REST-set GPU types too (endpoint.ts unscaleEndpoint), or names the PATCH.
    for (const page of ["docs/api-docs/endpoint.md", "README.md"]) {
      const text = flat(read(page));
      for (const fact of [
        'gets its worker counts back, and its GPU types set through REST (`gpuIds` `""`) too',
        "the `PATCH /endpoints/{id}` with `gpuTypeIds` that restores them",
      ]) {
        if (!text.includes(fact)) problems.push(`${page}: ${fact}`);
      }
    }
    expect(flat(read("provider/endpoint.ts"))).toMatch(/\(PATCH \/endpoints\/\$\{id\} with gpuTypeIds/);
    const architecture = flat(read("docs/architecture.md"));
    if (architecture.includes("until the service accepts it"))
      problems.push("architecture: retried until accepted");
    if (
      !architecture.includes(
        "and the GPU types set through REST the scale's `saveEndpoint` replaced (`undoRemove`)",
      )
    )
      problems.push("architecture: the undo's GPU types");
    expect(problems).toEqual([]);
  });
});

describe("the README's rule for a create whose answer was lost, per kind", () => {
  // implement.ts madeAnyway: a unique name the program chose (spec.uniqueName) or the create's mark
  // (createMark) tells the one this create made; a generated name without a mark cannot be told.
  test("names the kinds whose names are unique and the kinds that carry the create's mark, as the code has them", () => {
    // In the order the README names them.
    const kinds = [
      [endpointSpec, endpointDefinition()],
      [podSpec, podDefinition()],
      [templateSpec, templateDefinition()],
      [networkVolumeSpec, networkVolumeDefinition()],
      [containerRegistryAuthSpec, containerRegistryAuthDefinition()],
      [secretSpec, secretDefinition()],
    ] as const;
    const unique = kinds.filter(([spec]) => spec.uniqueName).map(([spec]) => spec.type);
    const marked = kinds
      .filter(([, definition]) => definition.createMark !== undefined)
      .map(([spec]) => spec.type);
    const unmarked = kinds
      .filter(([, definition]) => definition.createMark === undefined)
      .map(([spec]) => spec.type);
    expect(CREATE_MARK).toBe("RUNPODKIT_CREATE_MARK");
    const readme = flat(read("README.md"));
    const list = (types: string[], last: string) =>
      types.length === 1 ? types[0]! : `${types.slice(0, -1).join(", ")} ${last} ${types.at(-1)!}`;
    expect(readme).toContain(
      `When the name is unique in the account and the program chose it (a ${list(unique, "or")}), the one resource`,
    );
    expect(readme).toContain(
      `a create of a generated ${list(marked, "or")} name also sets the env key \`${CREATE_MARK}\``,
    );
    expect(readme).toContain(`A ${list(unmarked, "or")} has no field to carry such a mark`);
    const architecture = flat(read("docs/architecture.md"));
    expect(architecture).toContain(
      `\`${CREATE_MARK}\` in a generated ${list(
        marked.map((type) => `${type}'s`),
        "or",
      )} env), is the one the create made`,
    );
    expect(architecture).toContain(
      `(a generated name and no mark, as a ${list(
        unmarked.map((type) => `${type}'s`),
        "or",
      )}; a name that may repeat)`,
    );
  });
});

describe("the resource pages of the kinds a lost create cannot take over by a generated name", () => {
  test("each kind without a create mark says so on its page, and whether a chosen name is taken over", () => {
    const kinds = [
      [endpointSpec, endpointDefinition(), "endpoint"],
      [podSpec, podDefinition(), "pod"],
      [templateSpec, templateDefinition(), "template"],
      [networkVolumeSpec, networkVolumeDefinition(), "network-volume"],
      [containerRegistryAuthSpec, containerRegistryAuthDefinition(), "container-registry-auth"],
      [secretSpec, secretDefinition(), "secret"],
    ] as const;
    // implement.ts madeAnyway words the refusal so.
    expect(flat(read("provider/implement.ts"))).toContain("carries no mark of the create that made it");
    const problems = kinds
      .filter(([, definition]) => definition.createMark === undefined)
      .flatMap(([spec, , page]) => {
        const text = flat(read(`docs/api-docs/${page}.md`));
        const out: string[] = [];
        if (
          !/carries no mark of the create that made it, so one found of a generated name is not taken over/.test(
            text,
          )
        )
          out.push(`${page}: the generated name's rule`);
        const chosen = spec.uniqueName
          ? "with a name the program chose, the one found is this create's and is taken over"
          : "a name the program chose proves nothing either and fails the same way";
        if (!text.includes(chosen)) out.push(`${page}: ${chosen}`);
        return out;
      });
    expect(problems).toEqual([]);
  });
});

describe("the README's /stream figures", () => {
  test("the reply bound, the chunk size and maxReplyBytes' default are the code's; a failed job's error counts", () => {
    const readme = flat(read("README.md"));
    const mib = (bytes: number) => bytes / 1024 / 1024;
    expect(readme).toContain(
      `One reply of the local service carries at most ${mib(JOB_POLICY.streamReplyBytes)} MiB of chunks (four of the largest, ${mib(JOB_POLICY.streamChunkBytes)} MB each;`,
    );
    expect(JOB_POLICY.streamReplyBytes / JOB_POLICY.streamChunkBytes).toBe(4);
    expect(readme).toContain(`\`maxReplyBytes\` (default ${mib(DEFAULT_MAX_REPLY_BYTES)} MiB) on any client`);
    // job-service.ts stream(): the envelope (status and the job's error) is taken from the bound first.
    expect(readme).toContain(
      "a little over the largest chunk (1 MB of JSON) plus the job's error (a failed job's every reply carries it) streams any job",
    );
  });
});

describe("the SDK's hold figures in the README", () => {
  test("a stream poll's budget adds the SDK's 10 s, and the local service holds 9 s (its default)", () => {
    const readme = flat(read("README.md"));
    const sdkHold = JOB_LIMITS.streamHold.max / 1000;
    const localHold = DEFAULT_JOB_PLANE_CONFIG.streamHoldMs / 1000;
    // jobs.ts stream(): each poll's budget is JOB_LIMITS.streamHold.max plus timeoutMs.
    expect(flat(read("sdk/jobs.ts"))).toContain(
      "JOB_LIMITS.streamHold.max + (options.timeoutMs ?? this.#timeoutMs)",
    );
    expect(readme).toContain(
      `each \`stream\` poll ${sdkHold} s, the longest a service holds an empty poll (the local service holds one ${localHold} s by default)`,
    );
    expect(readme).toContain(`budget (${sdkHold} s for the service's hold plus \`timeoutMs\``);
    expect(readme).not.toContain("the service's 10 s hold");
  });

  test("a status call's `ttl` bounds are the SDK's (JOB_LIMITS.ttl)", () => {
    const readme = flat(read("README.md"));
    const { min, max } = JOB_LIMITS.ttl;
    expect([min / 1000, max / 86_400_000]).toEqual([10, 7]);
    expect(readme).toContain(
      `\`status(id, { ttl })\` and \`statusSync(id, { ttl })\` set the job's \`ttl\` (in milliseconds, ${min} to ${max}: 10 s to 7 days)`,
    );
  });
});

describe("the README's Troubleshooting rows quote what the code says", () => {
  const readme = read("README.md");
  const table = readme.slice(readme.indexOf("## Troubleshooting"), readme.indexOf("## Docs"));
  /** The row whose first cell starts with `start`, as [what you see, why and the fix]. */
  const row = (start: string): [string, string] => {
    const line = table.split("\n").find((l) => l.startsWith(`| ${start}`));
    expect(line, start).toBeDefined();
    const [seen, why] = line!.slice(2, -2).split(" | ");
    return [seen!, why ?? ""];
  };
  /** Each piece of each `quoted` text of a cell (split at `...`, the message's variable parts). */
  const pieces = (cell: string) =>
    [...cell.matchAll(/`([^`]+)`/g)]
      .flatMap((m) => m[1]!.split("...").map((p) => p.trim()))
      .filter((p) => p.length >= 8);

  test("each quoted message of the provider's and the SDK's rows is in the code that says it", () => {
    const code = (path: string) => flat(read(path));
    const rows: [string, string][] = [
      ["A create fails with `the service may have created the", code("provider/implement.ts")],
      ["`up` warns `overwrote what was changed outside Pulumi", code("provider/implement.ts")],
      ["A create fails with `NAME_TAKEN`", code("provider/errors.ts")],
      ["An SDK call fails `while the call waited to be sent`", code("sdk/jobs.ts")],
      ["A `ProtocolError`: `the reply is larger than maxReplyBytes`", code("sdk/http.ts")],
    ];
    const missing = rows.flatMap(([start, text]) =>
      pieces(row(start)[0])
        .filter((piece) => !text.includes(piece))
        .map((piece) => `${start}: ${piece}`),
    );
    expect(missing).toEqual([]);
    // The leftover warning's row also quotes Pulumi's own words ("interrupted while creating").
    const [leftover] = row("`up` warns of pending operations");
    expect(leftover).toContain('`named "..." already exists in the account`');
    expect(code("provider/implement.ts")).toMatch(/named "\$\{name\}" already exists in the account \(id/);
  });

  test("check's refusal of the create mark, and the kinds that carry it", () => {
    const [seen, why] = row("`preview` or `up` fails naming `env.RUNPODKIT_CREATE_MARK`");
    const [failure] = reservedMarkFailures({ [CREATE_MARK]: "x" });
    expect(failure?.property).toBe(`env.${CREATE_MARK}`);
    expect(seen).toContain(`\`env.${CREATE_MARK}\` (\`is reserved for runpodkit\`)`);
    expect(failure?.reason).toContain(`env.${CREATE_MARK}: is reserved for runpodkit`);
    const marked = [
      [endpointSpec, endpointDefinition()],
      [podSpec, podDefinition()],
      [templateSpec, templateDefinition()],
    ] as const;
    expect(marked.every(([, d]) => d.createMark !== undefined)).toBe(true);
    expect(why).toContain("a create of a generated Endpoint, Pod or Template name");
    expect(flat(readme)).toContain(`It takes ${CREATE_MARK_BYTES} bytes of the env's 256 KiB`);
  });

  test("the charset 415 and the /openai route's errors", () => {
    const [charset] = row("415 `body: charset");
    const refusal = charsetRefusal("application/json; charset=utf-16")?.message ?? "";
    for (const piece of pieces(charset)) expect(`body: ${refusal}`).toContain(piece);
    const [seen, why] = row("An OpenAI client on the local service's");
    const route = flat(read("service/jobs/http/openai-route.ts"));
    // errorOf: FAILED 422, TIMED_OUT and a wait that ends 408, CANCELLED (or purged) 409.
    for (const [status, code] of [
      [422, "job_failed"],
      [408, "job_timed_out"],
      [409, "job_cancelled"],
      [408, "wait_timeout"],
    ] as const) {
      expect(route, code).toMatch(new RegExp(`status: ${status}, type: "\\w+", code: "${code}"`));
      expect(seen).toContain(`\`${status} job`);
    }
    expect(route).toMatch(/message: cut\(`job \$\{id\} failed: /);
    expect(why).toContain(`the route's ${OPENAI_WAIT_MS / 1000} s wait ended`);
    expect(flat(read("docs/installation-configuration.md"))).toContain(
      `The reply waits for the job, as \`/runsync\` does, up to ${OPENAI_WAIT_MS / 1000} s.`,
    ); // routeRefusal: the route's own refusals, OpenAI-shaped; only 429 and 503 retried.
    const [refused, refusedWhy] = row(
      "The `openai` client on `/v2/<endpoint id>/openai/v1` fails before any job",
    );
    for (const status of [401, 429, 503]) expect(refused).toContain(`\`${status}`);
    expect(route).toMatch(/const RETRIED = new Set\(\[429, 503\]\)/);
    expect(refusedWhy).toContain("The client retries only 429 and 503");
  });
});

describe("the overwrite warning the docs quote", () => {
  test("README and docs/_index.md quote implement.ts's words", () => {
    const source = flat(read("provider/implement.ts"));
    const words =
      /`\$\{warningSubject\(call, news\)\}: (overwrote what was changed outside Pulumi[^`$]*?): \$\{overwritten/.exec(
        source,
      )?.[1];
    expect(words).toBe("overwrote what was changed outside Pulumi since the last up or refresh");
    for (const page of ["README.md", "docs/_index.md"]) {
      expect(flat(read(page)), page).toContain(
        `\`warning: update endpoint api-1a2b3c4 (resource Endpoint "api"): ${words}: workersMax (4 there, now 5)\``,
      );
    }
  });
});

describe("SECURITY.md's tests", () => {
  test("every test file it names exists, and every test it quotes is in that file", () => {
    const text = flat(read("SECURITY.md"));
    const named = [...text.matchAll(/`(test\/[\w./-]+\.test\.ts)`(?: \(("[^)]*)\))?/g)];
    expect(named.length).toBeGreaterThanOrEqual(15);
    const problems = named.flatMap(([, path, quoted]) => {
      let source: string;
      try {
        source = flat(read(path!));
      } catch {
        return [`${path}: no such file`];
      }
      // Each "title" quoted after the file; a trailing "..." stands for the rest of a long title.
      const titles = [...(quoted ?? "").matchAll(/"([^"]+)"/g)].map((m) => m[1]!.replace(/\s*\.\.\.$/, ""));
      return titles.filter((title) => !source.includes(title)).map((title) => `${path}: "${title}"`);
    });
    expect(problems).toEqual([]);
  });
});

describe("the README's JSON body rules", () => {
  test("names every charset a JSON body may declare (edge/body.ts charsetRefusal)", () => {
    const readme = flat(read("README.md"));
    const taken = ["utf-8", "utf8", "us-ascii", "UTF-8", '"utf-8"'].filter(
      (charset) => charsetRefusal(`application/json; charset=${charset}`) === null,
    );
    expect(taken).toEqual(["utf-8", "utf8", "us-ascii", "UTF-8", '"utf-8"']);
    expect(charsetRefusal("application/json; charset=utf-16")).not.toBeNull();
    expect(readme).toContain(
      "(`charset=utf-8` or `utf8`, in any case, quoted or not, and `us-ascii` are taken)",
    );
  });
});

describe("the README as a newcomer reads it", () => {
  const readme = read("README.md");
  const sections = [...readme.matchAll(/^## (.+)$/gm)].map((m) => m[1]!);

  test("opens with the two set-up commands, then a contents list of every section, in order", () => {
    expect(sections.slice(0, 2)).toEqual(["Set up", "Contents"]);
    const setUp = readme.slice(readme.indexOf("## Set up"));
    expect(
      /```sh\n(.*)\n(.*)\n```/
        .exec(setUp)
        ?.slice(1, 3)
        .map((l) => l.split("#")[0]!.trim()),
    ).toEqual(["npm ci && npm start", "npm ci && npm test"]);
    const contents = readme.slice(
      readme.indexOf("## Contents"),
      readme.indexOf("\n## ", readme.indexOf("## Contents") + 3),
    );
    const listed = [...contents.matchAll(/^- \[(.+?)\]\(#/gm)].map((m) => m[1]!);
    expect(listed).toEqual(sections.slice(2));
  });

  test("the order a user needs: install, first deploy, the SDK, the local service, logs, the console, troubleshooting", () => {
    const order = [
      "Install",
      "First deploy with Pulumi",
      "The SDK",
      "The local service",
      "Logs",
      "The console",
      "Troubleshooting",
    ];
    expect(sections.filter((s) => order.includes(s))).toEqual(order);
  });

  test("the compatibility detail lives on the installation page, which the README links", () => {
    expect(readme).toContain(
      "(docs/installation-configuration.md#supported-node-versions-and-package-managers)",
    );
    const page = read("docs/installation-configuration.md");
    const detail = page.slice(page.indexOf("## Supported Node versions and package managers"));
    for (const fact of [
      "| Package manager |",
      "ERR_PNPM_IGNORED_BUILDS",
      "nodeLinker: node-modules",
      "skipLibCheck",
      "--format=cjs",
      "ERESOLVE",
      "Not proven here",
    ]) {
      expect(detail, fact).toContain(fact);
    }
  });
});

describe("the workers' bounds the docs give are the code's defaults", () => {
  test("the memory bound (4 GiB) and the echo rate (64 KiB a second)", () => {
    const { workerMemoryBytes, workerEchoBytesPerSecond, memoryWatchMs } = DEFAULT_JOB_PLANE_CONFIG;
    expect(workerMemoryBytes).toBe(4 * 1024 ** 3);
    expect(workerEchoBytesPerSecond).toBe(64 * 1024);
    expect(memoryWatchMs).toBe(1_000);
    const readme = flat(read("README.md"));
    expect(readme).toContain("`startService({config: {jobs: {workerMemoryBytes}}})`, 4 GiB;");
    expect(readme).toContain("read every second on Linux");
    expect(readme).toContain("at most 64 KiB a second per worker (`config.jobs.workerEchoBytesPerSecond`)");
    expect(readme).toContain("over the bound of 4096 MiB a worker");
    const handlers = flat(read("examples/handlers/README.md"));
    expect(handlers).toContain("(`config.jobs.workerMemoryBytes`, 4 GiB;");
    expect(handlers).toContain("Every second (`memoryWatchMs`)");
    // memory.ts: VmRSS every reading, Pss (smaps_rollup, costly) only for a group over its bound.
    expect(handlers).toContain(
      "first each process's `VmRSS`, and only when their sum is over the bound each process's proportional set size, `Pss`",
    );
    expect(flat(read("docs/worker-protocol.md"))).toContain("`workerMemoryBytes` (4 GiB, `--worker-memory`)");
  });
});
