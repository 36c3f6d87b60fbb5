/**
 * provider/public-types.ts: the plain types the published declarations of `runpodkit` use instead of
 * the zod schemas (so that they import nothing but @pulumi/pulumi, see scripts/gen-public-types.ts).
 * The file is what the generator writes, and each type is the schema's own (`tsc -p tsconfig.json`
 * type-checks the expectTypeOf lines: a drifted type fails the typecheck).
 */
import { readFileSync } from "node:fs";
import { describe, expect, expectTypeOf, test } from "vitest";
import type { z } from "zod";
import type { ContainerRegistryAuthInputs } from "../../provider/container-registry-auth";
import type { EndpointComputed, EndpointInputs } from "../../provider/endpoint";
import type { NetworkVolumeComputed, NetworkVolumeInputs } from "../../provider/network-volume";
import type { PodComputed, PodInputs } from "../../provider/pod";
import type * as generated from "../../provider/public-types";
import type { PulumiInputs, StateOf } from "../../provider/resource";
import type { SecretComputed, SecretInputs } from "../../provider/secret";
import type { TemplateInputs } from "../../provider/template";
import { generatePublicTypes, PUBLIC_TYPES_PATH } from "../../scripts/gen-public-types";
import type { CpuFlavor, DataCenter, GpuType } from "../../sdk/schemas";

/** The arguments as the resources declared them before, field by field (optional and readonly kept). */
type Args<S extends z.ZodObject> = Fields<PulumiInputs<z.input<S>>>;
/**
 * An object's fields as one plain mapped type: expectTypeOf tells an interface from an intersection
 * (StateOf's) even where every field, optional or not, is the same.
 */
type Fields<T> = { [K in keyof T]: T[K] };

describe("the generated public types", () => {
  test("provider/public-types.ts is what `npm run types` writes from the schemas", () => {
    expect(readFileSync(PUBLIC_TYPES_PATH, "utf8")).toBe(generatePublicTypes());
  }, 60_000);

  test("each resource's arguments and outputs are its schemas' types", () => {
    expectTypeOf<Fields<generated.EndpointArgs>>().toEqualTypeOf<Args<typeof EndpointInputs>>();
    expectTypeOf<Fields<generated.EndpointState>>().toEqualTypeOf<
      Fields<StateOf<typeof EndpointInputs, typeof EndpointComputed>>
    >();
    expectTypeOf<Fields<generated.TemplateArgs>>().toEqualTypeOf<Args<typeof TemplateInputs>>();
    expectTypeOf<Fields<generated.TemplateState>>().toEqualTypeOf<Fields<StateOf<typeof TemplateInputs>>>();
    expectTypeOf<Fields<generated.NetworkVolumeArgs>>().toEqualTypeOf<Args<typeof NetworkVolumeInputs>>();
    expectTypeOf<Fields<generated.NetworkVolumeState>>().toEqualTypeOf<
      Fields<StateOf<typeof NetworkVolumeInputs, typeof NetworkVolumeComputed>>
    >();
    expectTypeOf<Fields<generated.ContainerRegistryAuthArgs>>().toEqualTypeOf<
      Args<typeof ContainerRegistryAuthInputs>
    >();
    expectTypeOf<Fields<generated.ContainerRegistryAuthState>>().toEqualTypeOf<
      Fields<StateOf<typeof ContainerRegistryAuthInputs>>
    >();
    expectTypeOf<Fields<generated.SecretArgs>>().toEqualTypeOf<Args<typeof SecretInputs>>();
    expectTypeOf<Fields<generated.SecretState>>().toEqualTypeOf<
      Fields<StateOf<typeof SecretInputs, typeof SecretComputed>>
    >();
    expectTypeOf<Fields<generated.PodArgs>>().toEqualTypeOf<Args<typeof PodInputs>>();
    expectTypeOf<Fields<generated.PodState>>().toEqualTypeOf<
      Fields<StateOf<typeof PodInputs, typeof PodComputed>>
    >();
  });

  test("the lookups' results are the SDK's catalogue types", () => {
    expectTypeOf<generated.GpuType>().toEqualTypeOf<GpuType>();
    expectTypeOf<generated.CpuFlavor>().toEqualTypeOf<CpuFlavor>();
    expectTypeOf<generated.DataCenter>().toEqualTypeOf<DataCenter>();
  });
});
