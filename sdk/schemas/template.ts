import { z } from "zod";
import type * as api from "../public-types";
import { OptionalRef, optionalFields, ResourceName, refuseItems, restRef, TemplateCategory } from "./common";
import { splitCommaList } from "./defaults";
import { DOCKER_ARGS_MAX_LENGTH } from "./docker-args";

/**
 * GraphQL dockerArgs (templates, pods): the start command as one string, any string (the real service
 * keeps it as given); REST's dockerStartCmd is its argv, or `/bin/sh -c` and the string when it needs a
 * shell (docker-args.ts dockerStartCmdOf).
 */
export const GqlDockerArgs = z.string().max(DOCKER_ARGS_MAX_LENGTH).nullish();

/**
 * How large an env may be, in UTF-8 bytes. A worker is a process started with the env of its template
 * and endpoint: Linux refuses to start a process with one `NAME=value` string of 128 KiB or more
 * (E2BIG, MAX_ARG_STRLEN), and all of its strings must fit ARG_MAX (2 MiB on Linux by default, 1 MiB
 * on macOS) with the env of the other side (template or endpoint) and the worker's own variables.
 */
export const ENV_LIMITS = {
  /** One name. */
  nameBytes: 1_024,
  /** One value (with the largest name, `NAME=value` stays under Linux's 128 KiB per string). */
  valueBytes: 126 * 1_024,
  /** Every `NAME=value` of one env together (a template's, an endpoint's, a pod's). */
  totalBytes: 256 * 1_024,
} as const;

const utf8Bytes = (text: string): number => new TextEncoder().encode(text).length;

/**
 * An environment variable's name: a process environment holds `NAME=value` strings, so a name with
 * "=" would set another variable than the one named (and pass the worker's filter of runtime
 * variables by name), and NUL ends the string.
 */
export const EnvName = z
  .string()
  .min(1)
  .refine((name) => !name.includes("=") && !name.includes("\0"), {
    error: 'must not contain "=" or a NUL character (an environment variable name)',
  })
  // REST refuses a `__proto__` key anywhere in a body (edge/body.ts): GraphQL the same, so an env
  // written on one wire can be written back on the other.
  .refine((name) => name !== "__proto__", { error: 'must not be "__proto__"; rename it' })
  .refine((name) => name.length <= ENV_LIMITS.nameBytes && utf8Bytes(name) <= ENV_LIMITS.nameBytes, {
    error: `an environment variable name is at most ${ENV_LIMITS.nameBytes} bytes`,
  });
/** An environment variable's value: anything but NUL, which no process environment can hold, within its size. */
export const EnvValue = z
  .string()
  .refine((value) => !value.includes("\0"), {
    error: "must not contain a NUL character (an environment variable value)",
  })
  .refine((value) => value.length <= ENV_LIMITS.valueBytes && utf8Bytes(value) <= ENV_LIMITS.valueBytes, {
    error: `an environment variable value is at most ${ENV_LIMITS.valueBytes} bytes (${ENV_LIMITS.valueBytes / 1_024} KiB: a larger one could not be given to a process; keep large data in a file or a network volume)`,
  });

/** An env's size as ENV_LIMITS.totalBytes counts it: each `NAME=value` string and its end. */
export function envBytes(entries: Iterable<readonly [string, string]>): number {
  let total = 0;
  for (const [name, value] of entries) total += utf8Bytes(name) + utf8Bytes(value) + 2;
  return total;
}

/** Adds an issue when the entries together are past ENV_LIMITS.totalBytes. */
function checkEnvTotal(entries: Iterable<readonly [string, string]>, ctx: z.RefinementCtx): void {
  const total = envBytes(entries);
  if (total > ENV_LIMITS.totalBytes) {
    ctx.addIssue({
      code: "custom",
      message: `all variables together are ${total} bytes, more than the ${ENV_LIMITS.totalBytes} (${ENV_LIMITS.totalBytes / 1_024} KiB) an env may hold`,
    });
  }
}

/** GraphQL env entries: [{key, value}]. REST uses an object map instead. */
export const KeyValue = z.strictObject({ key: EnvName, value: EnvValue });
export type KeyValue = z.infer<typeof KeyValue>;

const entryPairs = (list: readonly (KeyValue | null)[]) =>
  list.flatMap((entry) => (entry ? [[entry.key, entry.value] as const] : []));

/**
 * Adds an issue at the second entry of a key given twice: the env becomes a map (REST's object), so
 * one of the two values would be dropped without a word.
 */
function checkEnvKeysOnce(list: readonly (KeyValue | null)[], ctx: z.RefinementCtx): void {
  const first = new Map<string, number>();
  list.forEach((entry, index) => {
    if (!entry) return;
    const earlier = first.get(entry.key);
    if (earlier === undefined) {
      first.set(entry.key, index);
      return;
    }
    ctx.addIssue({
      code: "custom",
      path: [index, "key"],
      message: `${JSON.stringify(entry.key)} is given twice (entries ${earlier} and ${index}); give each variable once`,
    });
  });
}

/** A GraphQL env list (templates, endpoints): each key once, within ENV_LIMITS.totalBytes. */
export const GqlEnvList = z.array(KeyValue).superRefine((list, ctx) => {
  checkEnvKeysOnce(list, ctx);
  checkEnvTotal(entryPairs(list), ctx);
});

/** A pod's GraphQL env list, whose null entries are skipped: each key once, within ENV_LIMITS.totalBytes. */
export const GqlPodEnvList = z.array(KeyValue.nullable()).superRefine((list, ctx) => {
  checkEnvKeysOnce(list, ctx);
  checkEnvTotal(entryPairs(list), ctx);
});

export const EnvMap = z
  .record(EnvName, EnvValue)
  .superRefine((env, ctx) => checkEnvTotal(Object.entries(env), ctx));
/** What a port must look like: the OpenAPI's "[port number]/[protocol]", protocol http or tcp. */
export const PORT_FORM = '"<port>/http" or "<port>/tcp", port 1-65535';

/** A port as the real service takes it: 1-65535, then "/http" or "/tcp" (a pattern, so openapi.json shows it). */
const PORT_PATTERN = /^([1-9]\d{0,3}|[1-5]\d{4}|6[0-4]\d{3}|65[0-4]\d{2}|655[0-2]\d|6553[0-5])\/(http|tcp)$/;

/** Whether `value` is a port as the real service takes it: "8888/http" or "22/tcp". */
export function isPortSpec(value: string): boolean {
  return PORT_PATTERN.test(value);
}

/** "8888/http" or "22/tcp". */
export const PortSpec = z.string().regex(PORT_PATTERN, `expected ${PORT_FORM}`);

const notUpdatable = () => z.never({ error: "is not updatable; create a new template instead" }).optional();

/** Upper bound of a template's startScript, in characters. */
export const START_SCRIPT_MAX_LENGTH = 65_536;
/** A template's startScript: a script its pods run at start (GraphQL only; REST has no such field). */
export const StartScript = z.string().max(START_SCRIPT_MAX_LENGTH);

export { TEMPLATE_DEFAULTS } from "./defaults";

/** The REST record. */
export const Template = z.object({
  id: z.string(),
  name: z.string(),
  imageName: z.string(),
  category: z.string(),
  isServerless: z.boolean(),
  isPublic: z.boolean(),
  isRunpod: z.boolean(),
  containerDiskInGb: z.number().int(),
  volumeInGb: z.number().int(),
  volumeMountPath: z.string(),
  dockerEntrypoint: z.array(z.string()),
  dockerStartCmd: z.array(z.string()),
  env: EnvMap,
  ports: z.array(z.string()),
  readme: z.string(),
  containerRegistryAuthId: z.string().nullish(),
  earned: z.number().optional(),
  runtimeInMin: z.number().optional(),
});
// The generated plain type (equal to the schema's, by a type test): it holds where zod cannot be reached.
export type Template = api.Template;
export const TemplateList = z.array(Template);

/**
 * Bounds of free-text fields, each well above what a real value needs (a registry image reference
 * with tag and digest is a few hundred characters; a path, PATH_MAX), so that no one field can take
 * the whole request body into the store.
 */
export const IMAGE_NAME_MAX_LENGTH = 1024;
export const MOUNT_PATH_MAX_LENGTH = 4096;
export const README_MAX_LENGTH = 65_536;
export const ImageName = z.string().min(1).max(IMAGE_NAME_MAX_LENGTH);
/**
 * The place an absolute path names, written plainly: `"/a/../b"`, `"/a/./b"` and `"//a"` are `"/b"`,
 * `"/a/b"` and `"/a"`. A trailing "/" is kept (it names the same directory). Undefined when `path`
 * is already so written.
 */
export function plainMountPath(path: string): string | undefined {
  const parts = path.split("/").slice(1);
  const trailing = parts.length > 1 && parts.at(-1) === "";
  const inner = trailing ? parts.slice(0, -1) : parts;
  if (!inner.some((part) => part === "" || part === "." || part === "..")) return undefined;
  const kept: string[] = [];
  for (const part of inner) {
    if (part === "..") kept.pop();
    else if (part !== "" && part !== ".") kept.push(part);
  }
  return `/${kept.join("/")}${trailing && kept.length > 0 ? "/" : ""}`;
}

const quotedPath = (path: unknown) => JSON.stringify(String(path).slice(0, 100));

/**
 * Where a volume is mounted in the container: an absolute path, as the real service describes it ("the
 * absolute path where the volume will be mounted"); a relative one names no place in a container. ""
 * is taken as it was (a template of a serverless worker may have no volume). A path with "." or ".."
 * parts or "//" is refused naming the plain one: stored as written, it read back as another spelling
 * of the place the container gets, and two spellings of one place compared different.
 */
export const MountPath = z
  .string()
  // abort: a path too long is not also quoted as relative.
  .max(MOUNT_PATH_MAX_LENGTH, { abort: true })
  .refine((path) => path === "" || path.startsWith("/"), {
    error: (issue) =>
      `must be an absolute path (starting with "/", e.g. "/workspace"), not ${quotedPath(issue.input)}`,
    abort: true,
  })
  .refine((path) => plainMountPath(path) === undefined, {
    error: (issue) =>
      `must not have "." or ".." parts or "//": write ${quotedPath(plainMountPath(String(issue.input)))}, not ${quotedPath(issue.input)}`,
  });

/** A template's name: every resource kind's rule (ResourceName), trimmed and composed. */
export const TemplateName = ResourceName;

const templateFields = {
  name: TemplateName,
  imageName: ImageName,
  containerDiskInGb: z.int().min(0),
  volumeInGb: z.int().min(0),
  volumeMountPath: MountPath,
  dockerEntrypoint: z.array(z.string()),
  dockerStartCmd: z.array(z.string()),
  env: EnvMap,
  ports: z.array(PortSpec),
  readme: z.string().max(README_MAX_LENGTH),
  isPublic: z.boolean(),
  /** Must name a registry auth of the same account; null clears it (update). */
  containerRegistryAuthId: restRef("a container registry auth"),
};

const { name: _name, imageName: _imageName, ...optionalTemplateFields } = optionalFields(templateFields);

/** POST /templates: `name` (unique per account) and `imageName` are required. */
export const TemplateCreateInput = z.strictObject({
  name: templateFields.name,
  imageName: templateFields.imageName,
  category: TemplateCategory.optional(),
  isServerless: z.boolean().optional(),
  ...optionalTemplateFields,
});
export type TemplateCreateInput = api.TemplateCreateInput;

/** PATCH /templates/{id} and POST .../update: absent = unchanged; category and isServerless are fixed. */
export const TemplateUpdateInput = z.strictObject({
  ...optionalFields(templateFields),
  containerRegistryAuthId: templateFields.containerRegistryAuthId.nullable().optional(),
  category: notUpdatable(),
  isServerless: notUpdatable(),
});
export type TemplateUpdateInput = api.TemplateUpdateInput;

/** GET /templates and /templates/{id} query. */
export const TemplateListQuery = z.strictObject({
  /** Also list serverless templates that endpoints use (left out of the list by default). */
  includeEndpointBoundTemplates: z.stringbool().optional(),
  /** Also list community-made public templates (the local service has none). */
  includePublicTemplates: z.stringbool().optional(),
  /** Also list the official Runpod templates. */
  includeRunpodTemplates: z.stringbool().optional(),
});

/**
 * GraphQL saveTemplate(input). Without id: create. With id: a FULL REPLACE like saveEndpoint (omitted
 * fields reset to defaults), except category and isServerless, which are kept when omitted and refused
 * when changed, and REST's dockerEntrypoint, which this input has no field for (kept). env is
 * [{key, value}], ports a comma string ("8888/http,22/tcp"), dockerArgs a string (the start command
 * as a shell would read it, kept as written; REST's dockerStartCmd is its argv, or `/bin/sh -c
 * <string>` when it needs a shell, such as `a && b` or `$HOME`: schemas/docker-args.ts).
 */
export const GqlTemplateInput = z.strictObject({
  id: z.string().min(1).nullish(),
  name: templateFields.name,
  imageName: templateFields.imageName,
  category: TemplateCategory.nullish(),
  isServerless: z.boolean().nullish(),
  containerDiskInGb: templateFields.containerDiskInGb.nullish(),
  volumeInGb: templateFields.volumeInGb.nullish(),
  volumeMountPath: MountPath.nullish(),
  dockerArgs: GqlDockerArgs,
  env: GqlEnvList.nullish(),
  ports: z
    .string()
    .nullish()
    .superRefine((value, ctx) =>
      refuseItems(
        splitCommaList(value),
        (port) => !isPortSpec(port),
        (port) => `bad port "${port}"; expected ${PORT_FORM}`,
        ctx,
      ),
    ),
  readme: z.string().max(README_MAX_LENGTH).nullish(),
  isPublic: z.boolean().nullish(),
  /** "" = not given. */
  containerRegistryAuthId: OptionalRef,
  startSsh: z.boolean().nullish(),
  startJupyter: z.boolean().nullish(),
  startScript: StartScript.nullish(),
});
export type GqlTemplateInput = api.GqlTemplateInput;

/** GraphQL PodTemplate as `myself { podTemplates }` returns it. */
export const GqlPodTemplate = z.object({
  id: z.string(),
  name: z.string(),
  imageName: z.string(),
  category: z.string().nullish(),
  isServerless: z.boolean(),
  isPublic: z.boolean().nullish(),
  containerDiskInGb: z.number().int(),
  volumeInGb: z.number().int(),
  volumeMountPath: z.string().nullish(),
  dockerArgs: z.string(),
  env: z.array(z.object({ key: z.string(), value: z.string() })),
  ports: z.string(),
  readme: z.string().nullish(),
  containerRegistryAuthId: z.string().nullish(),
  /** GraphQL only (REST templates have none of these three); nullish: a service may leave them out. */
  startSsh: z.boolean().nullish(),
  startJupyter: z.boolean().nullish(),
  startScript: z.string().nullish(),
});
// The generated plain type (equal to the schema's, by a type test): it holds where zod cannot be reached.
export type GqlPodTemplate = api.GqlPodTemplate;

export { splitCommaList };
