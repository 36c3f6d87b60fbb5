import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { z } from "zod";
import { ContainerRegistryAuthInputs } from "../provider/container-registry-auth";
import { EndpointComputed, EndpointInputs } from "../provider/endpoint";
import { NetworkVolumeComputed, NetworkVolumeInputs } from "../provider/network-volume";
import { PodComputed, PodInputs } from "../provider/pod";
import { SecretComputed, SecretInputs } from "../provider/secret";
import { TemplateInputs } from "../provider/template";
import * as sdkSchemas from "../sdk/schemas";
import { CpuFlavor, DataCenter, GpuType } from "../sdk/schemas";

/**
 * provider/public-types.ts, generated from the zod schemas: the resources' arguments and outputs and
 * the lookups' results as plain interfaces, so the published .d.ts of `runpodkit` import no package
 * but @pulumi/pulumi. A consumer whose type checker cannot reach runpodkit's own dependencies (pnpm's
 * isolated layout read without following symlinks, as Pulumi's bundled ts-node 7 does) still sees
 * every type. A test regenerates the file and compares. Run `npm run types` to rewrite it.
 */

const PROVIDER = join(__dirname, "..", "provider");
export const PUBLIC_TYPES_PATH = join(PROVIDER, "public-types.ts");

interface Shape {
  readonly shape: Record<string, z.ZodType>;
}

/** Each generated type: its name, the type expression it expands, and where its fields' docs are. */
interface Entry {
  name: string;
  doc: string;
  /** A type expression over the probe's imports (see PROBE). */
  expand: string;
  described: Shape[];
  kind: "args" | "plain";
}

const RESOURCES: { type: string; module: string; inputs: Shape; computed?: Shape }[] = [
  { type: "Endpoint", module: "endpoint", inputs: EndpointInputs, computed: EndpointComputed },
  { type: "Template", module: "template", inputs: TemplateInputs },
  {
    type: "NetworkVolume",
    module: "network-volume",
    inputs: NetworkVolumeInputs,
    computed: NetworkVolumeComputed,
  },
  { type: "ContainerRegistryAuth", module: "container-registry-auth", inputs: ContainerRegistryAuthInputs },
  { type: "Secret", module: "secret", inputs: SecretInputs, computed: SecretComputed },
  { type: "Pod", module: "pod", inputs: PodInputs, computed: PodComputed },
];

const ENTRIES: Entry[] = [
  ...RESOURCES.flatMap(({ type, module, inputs, computed }): Entry[] => {
    const of = (name: string) => `typeof import("./${module}").${type}${name}`;
    return [
      {
        name: `${type}Args`,
        doc: `The arguments of ${type}: each value a plain value, a promise or an Output, at every level.`,
        expand: `z.input<${of("Inputs")}>`,
        described: [inputs],
        kind: "args",
      },
      {
        name: `${type}State`,
        doc: `The outputs of ${type}: every input with its default applied, and what the service computes.`,
        expand: `StateOf<${of("Inputs")}${computed ? `, ${of("Computed")}` : ""}>`,
        described: computed ? [inputs, computed] : [inputs],
        kind: "plain",
      },
    ];
  }),
  {
    name: "GpuType",
    doc: "A GPU type: prices are USD per GPU-hour; null where the type is not offered that way.",
    expand: 'z.output<typeof import("../sdk/schemas").GpuType>',
    described: [GpuType],
    kind: "plain",
  },
  {
    name: "CpuFlavor",
    doc: "A CPU flavor; an instance id is `<flavor>-<vCPUs>-<GB>`.",
    expand: 'z.output<typeof import("../sdk/schemas").CpuFlavor>',
    described: [CpuFlavor],
    kind: "plain",
  },
  {
    name: "DataCenter",
    doc: "A data center, with whether it holds network volumes (storageSupport).",
    expand: 'z.output<typeof import("../sdk/schemas").DataCenter>',
    described: [DataCenter],
    kind: "plain",
  },
];

const BIOME = require.resolve("@biomejs/biome/bin/biome");
const PROBE_FILE = join(PROVIDER, "__public-types-probe.ts");
const PROBE = [
  'import { z } from "zod";',
  'import type { StateOf } from "./resource";',
  ...ENTRIES.map((entry, i) => `export type __T${i} = ${entry.expand};`),
].join("\n");

/** A type printed from its structure, so that no zod alias (z.core.$Infer...) reaches the output. */
function printer(checker: ts.TypeChecker) {
  const print = (type: ts.Type, indent: string): string => {
    if (type.isUnion()) {
      // null and undefined last, as people write them.
      const rank = (t: ts.Type) =>
        t.getFlags() & ts.TypeFlags.Undefined ? 2 : t.getFlags() & ts.TypeFlags.Null ? 1 : 0;
      const members = [...type.types].sort((a, b) => rank(a) - rank(b));
      const parts = members.map((t) => print(t, indent));
      // `boolean` is the union true | false: keep it one word.
      const hasTrue = parts.includes("true");
      const hasFalse = parts.includes("false");
      const merged =
        hasTrue && hasFalse ? ["boolean", ...parts.filter((p) => p !== "true" && p !== "false")] : parts;
      return merged.map((p) => (p.includes("=>") ? `(${p})` : p)).join(" | ");
    }
    if (checker.isArrayType(type)) {
      const [element] = checker.getTypeArguments(type as ts.TypeReference);
      if (element === undefined) throw new Error("public types: an array without an element type");
      const inner = print(element, indent);
      return element.isUnion() && inner !== "boolean" ? `(${inner})[]` : `${inner}[]`;
    }
    const flags = type.getFlags();
    if (flags & (ts.TypeFlags.Object | ts.TypeFlags.Intersection)) {
      const index = checker.getIndexInfoOfType(type, ts.IndexKind.String);
      const props = checker.getPropertiesOfType(type);
      if (index !== undefined && props.length === 0) {
        return `Record<string, ${print(index.type, indent)}>`;
      }
      if (checker.getSignaturesOfType(type, ts.SignatureKind.Call).length > 0) {
        throw new Error(`public types: a function type ${checker.typeToString(type)}`);
      }
      const inner = `${indent}  `;
      const lines = props.map((prop) => {
        const optional = prop.getFlags() & ts.SymbolFlags.Optional ? "?" : "";
        return `${inner}${prop.getName()}${optional}: ${print(checker.getTypeOfSymbol(prop), inner)};`;
      });
      // A loose object lets extra keys through: its index signature stays, so that they stay readable.
      if (index !== undefined) lines.unshift(`${inner}[key: string]: ${print(index.type, inner)};`);
      return `{\n${lines.join("\n")}\n${indent}}`;
    }
    const text = checker.typeToString(type, undefined, ts.TypeFormatFlags.NoTruncation);
    if (/[$<]|\bz\./.test(text)) throw new Error(`public types: cannot print ${text} without zod`);
    return text;
  };
  return print;
}

/** The field's description (zod's .describe), from the first shape that has the field. */
function describe(shapes: Shape[], field: string): string | undefined {
  for (const shape of shapes) {
    const schema = shape.shape[field];
    if (schema !== undefined) return schema.description;
  }
  return undefined;
}

function comment(text: string, indent: string): string {
  const words = text.replaceAll("*/", "*\\/").split(/\s+/);
  const lines: string[] = [];
  let line = "";
  for (const word of words) {
    if (line !== "" && indent.length + 4 + line.length + 1 + word.length > 110) {
      lines.push(line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  lines.push(line);
  return lines.length === 1
    ? `${indent}/** ${lines[0]} */`
    : [`${indent}/**`, ...lines.map((l) => `${indent} * ${l}`), `${indent} */`].join("\n");
}

/** The probe's aliases, resolved by a program that type-checks it (the probe must have no error). */
function compileProbe(probeFile: string, probeText: string) {
  const options: ts.CompilerOptions = {
    strict: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2023,
    skipLibCheck: true,
    noEmit: true,
    types: ["node"],
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (fileName, languageVersion, ...rest) =>
    fileName === probeFile
      ? ts.createSourceFile(fileName, probeText, languageVersion)
      : getSourceFile.call(host, fileName, languageVersion, ...rest);
  host.fileExists = (fileName) => fileName === probeFile || fileExists.call(host, fileName);
  host.readFile = (fileName) => (fileName === probeFile ? probeText : readFile.call(host, fileName));
  const program = ts.createProgram([probeFile], options, host);
  const checker = program.getTypeChecker();
  const probe = program.getSourceFile(probeFile);
  if (probe === undefined) throw new Error("public types: the probe did not load");
  const errors = ts.getPreEmitDiagnostics(program, probe);
  if (errors.length > 0) {
    throw new Error(ts.flattenDiagnosticMessageText(errors[0]?.messageText ?? "", "\n"));
  }
  return { checker, aliases: probe.statements.filter(ts.isTypeAliasDeclaration) };
}

/** Biome's formatting, so that the file is the one `biome check` accepts. */
function format(text: string, path: string): string {
  const formatted = spawnSync(process.execPath, [BIOME, "format", `--stdin-file-path=${path}`], {
    input: text,
    encoding: "utf8",
    cwd: join(__dirname, ".."),
  });
  if (formatted.status !== 0) throw new Error(`public types: biome format failed: ${formatted.stderr}`);
  return formatted.stdout;
}

/** The text of provider/public-types.ts. */
export function generatePublicTypes(): string {
  const { checker, aliases } = compileProbe(PROBE_FILE, PROBE);
  const print = printer(checker);

  const out: string[] = [
    "// Generated by `npm run types` (scripts/gen-public-types.ts) from the zod schemas: do not edit.",
    "// Plain types, so that runpodkit's published .d.ts import nothing but @pulumi/pulumi.",
    'import type * as pulumi from "@pulumi/pulumi";',
    "",
    "/**",
    " * One value as an input at every level; literal unions (enums) stay precise. Distributes over unions.",
    " * Pulumi resolves nested inputs before check, so the provider only ever sees plain values.",
    " */",
    "export type DeepInput<T> = pulumi.Input<DeepInputInner<T>>;",
    "type DeepInputInner<T> = T extends readonly (infer E)[]",
    "  ? DeepInput<E>[]",
    "  : T extends object",
    "    ? { [K in keyof T]: DeepInput<T[K]> }",
    "    : T;",
    "",
    "/** A resource's arguments: every value may be a plain value, a promise or an Output at every level. */",
    "export type PulumiInputs<T> = { [K in keyof T]: DeepInput<T[K]> };",
    "",
    "/** The Output members a Resource class gains from its state (merged into the class's declaration). */",
    "export type OutputsOf<T> = { readonly [K in keyof T]-?: pulumi.Output<T[K]> };",
  ];
  ENTRIES.forEach((entry, i) => {
    const alias = aliases[i];
    if (alias === undefined) throw new Error(`public types: no probe for ${entry.name}`);
    const type = checker.getTypeAtLocation(alias.name);
    out.push("", comment(entry.doc, ""), `export interface ${entry.name} {`);
    // In the schemas' order (what schema.json and the docs list), not required-first.
    const order = entry.described.flatMap((shape) => Object.keys(shape.shape));
    const position = (name: string) => (order.includes(name) ? order.indexOf(name) : order.length);
    const props = [...checker.getPropertiesOfType(type)].sort(
      (a, b) => position(a.getName()) - position(b.getName()),
    );
    for (const prop of props) {
      const field = prop.getName();
      const optional = prop.getFlags() & ts.SymbolFlags.Optional ? "?" : "";
      const printed = print(checker.getTypeOfSymbol(prop), "  ");
      // A plain value's input is pulumi.Input (what the editor shows); objects and arrays nest.
      const typed =
        entry.kind === "plain"
          ? printed
          : printed.includes("{") || printed.includes("[]") || printed.includes("Record<")
            ? `DeepInput<${printed}>`
            : `pulumi.Input<${printed}>`;
      const doc = describe(entry.described, field);
      if (doc !== undefined) out.push(comment(doc, "  "));
      out.push(`  ${field}${optional}: ${typed};`);
    }
    out.push("}");
  });
  return format(`${out.join("\n")}\n`, PUBLIC_TYPES_PATH);
}

/*
 * sdk/public-types.ts: the REST and GraphQL clients' arguments and results as plain types, which the
 * clients' signatures use instead of z.input/z.output, so that their declarations hold where zod
 * cannot be reached (the job client's are written out in sdk/schemas/job.ts for the same reason).
 */
const SDK = join(__dirname, "..", "sdk");
export const SDK_PUBLIC_TYPES_PATH = join(SDK, "public-types.ts");
const SDK_PROBE_FILE = join(SDK, "__public-types-probe.ts");

interface SdkEntry {
  name: string;
  doc: string;
  /** Which module of sdk/schemas and which schema. */
  module: string;
  schema: string;
  /** What of the schema: its parsed value (a reply), what it accepts (an argument), or a query. */
  of: "output" | "input" | "query";
}

const out = (module: string, schema: string, doc: string): SdkEntry => ({
  name: schema,
  doc,
  module,
  schema,
  of: "output",
});
const arg = (module: string, schema: string, doc: string): SdkEntry => ({
  name: schema,
  doc,
  module,
  schema,
  of: "input",
});
const query = (module: string, schema: string, doc: string): SdkEntry => ({
  name: schema,
  doc,
  module,
  schema,
  of: "query",
});

const SDK_ENTRIES: SdkEntry[] = [
  out("endpoint", "Endpoint", "An endpoint as REST returns it."),
  arg("endpoint", "EndpointCreateInput", "What `rest.endpoints.create` takes."),
  arg("endpoint", "EndpointUpdateInput", "What `rest.endpoints.update` takes: absent fields are unchanged."),
  query(
    "endpoint",
    "EndpointGetQuery",
    "The query of `rest.endpoints.get` and `list` (flags as booleans or strings).",
  ),
  out("template", "Template", "A template as REST returns it."),
  arg("template", "TemplateCreateInput", "What `rest.templates.create` takes."),
  arg("template", "TemplateUpdateInput", "What `rest.templates.update` takes: absent fields are unchanged."),
  query(
    "template",
    "TemplateListQuery",
    "The query of `rest.templates.get` and `list` (flags as booleans or strings).",
  ),
  out("network-volume", "NetworkVolume", "A network volume as REST returns it."),
  arg("network-volume", "NetworkVolumeCreateInput", "What `rest.networkVolumes.create` takes."),
  arg("network-volume", "NetworkVolumeUpdateInput", "What `rest.networkVolumes.update` takes."),
  out("container-registry-auth", "ContainerRegistryAuth", "A container registry auth (never its password)."),
  arg(
    "container-registry-auth",
    "ContainerRegistryAuthCreateInput",
    "What `rest.containerRegistryAuths.create` and `graphql.saveRegistryAuth` take.",
  ),
  out("pod", "Pod", "A pod as REST returns it."),
  arg("pod", "PodCreateInput", "What `rest.pods.create` takes."),
  arg("pod", "PodUpdateInput", "What `rest.pods.update` takes: absent fields are unchanged."),
  query("pod", "PodListQuery", "The query of `rest.pods.list` (flags as booleans or strings)."),
  query("pod", "PodGetQuery", "The query of `rest.pods.get` (flags as booleans or strings)."),
  out("billing", "BillingRecord", "A record of `rest.billing.pods` and `rest.billing.endpoints`."),
  out("billing", "NetworkVolumeBillingRecord", "A record of `rest.billing.networkVolumes`."),
  arg("billing", "PodBillingQuery", "The query of `rest.billing.pods`."),
  arg("billing", "EndpointBillingQuery", "The query of `rest.billing.endpoints`."),
  arg("billing", "NetworkVolumeBillingQuery", "The query of `rest.billing.networkVolumes`."),
  out("endpoint", "GqlEndpoint", "An endpoint as GraphQL returns it."),
  arg(
    "endpoint",
    "GqlEndpointInput",
    "What `graphql.saveEndpoint` takes: a FULL REPLACE when it has an `id`.",
  ),
  out("endpoint", "ServerlessDiscount", "The account's serverless discount; null when it has none."),
  out("template", "GqlPodTemplate", "A template as GraphQL returns it."),
  arg(
    "template",
    "GqlTemplateInput",
    "What `graphql.saveTemplate` takes: a FULL REPLACE when it has an `id`.",
  ),
  out("network-volume", "GqlNetworkVolume", "A network volume as GraphQL returns it."),
  arg("network-volume", "GqlNetworkVolumeCreateInput", "What `graphql.createNetworkVolume` takes."),
  arg("network-volume", "GqlNetworkVolumeUpdateInput", "What `graphql.updateNetworkVolume` takes."),
  arg("container-registry-auth", "GqlRegistryAuthUpdateInput", "What `graphql.updateRegistryAuth` takes."),
  out("secret", "GqlSecret", "An account secret as GraphQL returns it (never its value)."),
  arg("secret", "GqlSecretCreateInput", "What `graphql.createSecret` takes."),
  arg("secret", "GqlSecretValueUpdateInput", "What `graphql.updateSecretValue` takes."),
  arg("secret", "GqlSecretDescriptionUpdateInput", "What `graphql.updateSecretDescription` takes."),
  out(
    "catalogue",
    "GpuType",
    "A GPU type: prices are USD per GPU-hour; null where the type is not offered that way.",
  ),
  arg("catalogue", "GqlGpuTypeFilter", "What `graphql.gpuTypes` takes: one id, several, or none for all."),
  out("catalogue", "CpuFlavor", "A CPU flavor; an instance id is `<flavor>-<vCPUs>-<GB>`."),
  arg("catalogue", "GqlCpuFlavorInput", "What `graphql.cpuFlavors` takes."),
  out("catalogue", "DataCenter", "A data center, with whether it holds network volumes (storageSupport)."),
  // The GraphQL inputs the SDK's clients do not send: `schemas.*Input` must hold without zod too.
  arg("catalogue", "GqlGpuLowestPriceInput", "The GraphQL `lowestPrice(input:)` argument of a GPU type."),
  arg("catalogue", "GqlGpuAvailabilityInput", "The GraphQL GPU availability query's input."),
  arg("endpoint", "GqlUpdateEndpointTemplateInput", "The GraphQL `updateEndpointTemplate` input."),
  arg("pod", "GqlPodFindAndDeployOnDemandInput", "The GraphQL `podFindAndDeployOnDemand` input."),
  arg("pod", "GqlDeployCpuPodInput", "The GraphQL `deployCpuPod` input."),
  arg("pod", "GqlPodEditJobInput", "The GraphQL `podEditJob` input."),
  arg("user", "GqlUserSettingsInput", "The GraphQL `updateUserSettings` input."),
];

function sdkExpand(entry: SdkEntry): string {
  const schema = `typeof import("./schemas/${entry.module}").${entry.schema}`;
  if (entry.of === "query") return `QueryInput<${schema}>`;
  return `z.${entry.of}<${schema}>`;
}

/** The text of sdk/public-types.ts. */
export function generateSdkPublicTypes(): string {
  const probeText = [
    'import { z } from "zod";',
    'import type { QueryInput } from "./rest";',
    ...SDK_ENTRIES.map((entry, i) => `export type __T${i} = ${sdkExpand(entry)};`),
  ].join("\n");
  const { checker, aliases } = compileProbe(SDK_PROBE_FILE, probeText);
  const print = printer(checker);
  const schemas: Record<string, unknown> = sdkSchemas;
  const lines: string[] = [
    "// Generated by `npm run types` (scripts/gen-public-types.ts) from the zod schemas: do not edit.",
    "// Plain types, so that the REST and GraphQL clients' declarations need no zod to be read.",
    "// Type aliases, not interfaces: a reply stays assignable to Record<string, unknown>, as before.",
  ];
  SDK_ENTRIES.forEach((entry, i) => {
    const alias = aliases[i];
    if (alias === undefined) throw new Error(`public types: no probe for ${entry.name}`);
    const type = checker.getTypeAtLocation(alias.name);
    const schema = schemas[entry.schema];
    const shape = schema instanceof z.ZodObject ? (schema as unknown as Shape) : undefined;
    lines.push("", comment(entry.doc, ""));
    if (type.isUnion() || shape === undefined) {
      lines.push(`export type ${entry.name} = ${print(type, "")};`);
      return;
    }
    lines.push(`export type ${entry.name} = {`);
    for (const prop of checker.getPropertiesOfType(type)) {
      const field = prop.getName();
      const optional = prop.getFlags() & ts.SymbolFlags.Optional ? "?" : "";
      const doc = describe([shape], field);
      if (doc !== undefined) lines.push(comment(doc, "  "));
      lines.push(`  ${field}${optional}: ${print(checker.getTypeOfSymbol(prop), "  ")};`);
    }
    lines.push("};");
  });
  return format(`${lines.join("\n")}\n`, SDK_PUBLIC_TYPES_PATH);
}

if (require.main === module) {
  const text = generatePublicTypes();
  if (!existsSync(PUBLIC_TYPES_PATH) || readFileSync(PUBLIC_TYPES_PATH, "utf8") !== text) {
    writeFileSync(PUBLIC_TYPES_PATH, text);
  }
  const sdkText = generateSdkPublicTypes();
  if (!existsSync(SDK_PUBLIC_TYPES_PATH) || readFileSync(SDK_PUBLIC_TYPES_PATH, "utf8") !== sdkText) {
    writeFileSync(SDK_PUBLIC_TYPES_PATH, sdkText);
  }
}
