/**
 * The resource argument types, checked by the compiler (`tsc -p tsconfig.json` type-checks this file;
 * a wrong `@ts-expect-error` or `expectTypeOf` fails the typecheck): an Output or a promise is accepted
 * at every level (map values, array elements, the whole map or array), as in Pulumi's generated SDKs,
 * and the precise types stay (enums, element types, required fields, unknown properties refused).
 */
import * as pulumi from "@pulumi/pulumi";
import { describe, expectTypeOf, test } from "vitest";
import type { EndpointArgs } from "../../provider/endpoint";
import type { PodArgs } from "../../provider/pod";
import type { DeepInput } from "../../provider/resource";
import type { TemplateArgs } from "../../provider/template";

const secretText: pulumi.Output<string> = pulumi.secret("hf_token");
const id: pulumi.Output<string> = pulumi.output("vol-1");
const count: pulumi.Output<number> = pulumi.output(1);
const pending: Promise<string> = Promise.resolve("later");

describe("resource argument types", () => {
  test("accept Outputs and promises inside maps and arrays", () => {
    expectTypeOf({
      templateId: id,
      env: { HF_TOKEN: secretText, MODEL: "small", PENDING: pending },
      networkVolumeIds: [id, "vol-2"],
      instanceIds: [pulumi.output("cpu3c-2-4")],
    }).toExtend<EndpointArgs>();
    expectTypeOf({
      imageName: "img:1",
      env: { MODEL: id },
      dockerStartCmd: ["python", secretText],
      ports: [pulumi.output("8888/http")],
    }).toExtend<TemplateArgs>();
    expectTypeOf({
      imageName: "runpod/pytorch:2.4",
      gpuTypeIds: [pulumi.output("NVIDIA GeForce RTX 4090" as const)],
      env: { TOKEN: secretText },
    }).toExtend<PodArgs>();
  });

  test("still accept whole Outputs of a map or an array, as before", () => {
    expectTypeOf({
      templateId: "t1",
      env: secretText.apply((token) => ({ TOKEN: token })),
      networkVolumeIds: id.apply((v) => [v]),
    }).toExtend<EndpointArgs>();
  });

  test("keep the precise types", () => {
    expectTypeOf<DeepInput<"QB" | "LB">>().toEqualTypeOf<pulumi.Input<"QB" | "LB">>();
    expectTypeOf<DeepInput<string[]>>().toEqualTypeOf<pulumi.Input<pulumi.Input<string>[]>>();
    expectTypeOf<DeepInput<Record<string, string>>>().toEqualTypeOf<
      pulumi.Input<{ [key: string]: pulumi.Input<string> }>
    >();

    // @ts-expect-error a number is not an env value, even inside an Output
    const badEnv: EndpointArgs = { templateId: "t1", env: { N: count } };
    // @ts-expect-error an array element keeps its type
    const badIds: EndpointArgs = { templateId: "t1", networkVolumeIds: [count] };
    // @ts-expect-error an enum stays an enum: any string is not an endpoint type
    const badType: EndpointArgs = { templateId: "t1", type: id };
    // @ts-expect-error templateId is still required
    const missing: EndpointArgs = { workersMax: 1 };
    // @ts-expect-error a GPU type id is one of the catalogue's, inside an Output too
    const badGpu: PodArgs = { imageName: "img:1", gpuTypeIds: [id] };
    // @ts-expect-error an unknown property is refused
    const unknown: EndpointArgs = { templateId: "t1", templateID: "t1" };
    expectTypeOf([badEnv, badIds, badType, badGpu, missing, unknown]).toBeArray();
  });
});
