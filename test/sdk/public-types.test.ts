/**
 * sdk/public-types.ts: the REST and GraphQL clients' arguments and results as plain types (see
 * scripts/gen-public-types.ts). The file is what `npm run types` writes, and each type is its zod
 * schema's own: `tsc -p tsconfig.json` type-checks the expectTypeOf lines, so a drifted type fails
 * the typecheck, and the clients' signatures are held to these types.
 */
import { readFileSync } from "node:fs";
import { describe, expect, expectTypeOf, test } from "vitest";
import type { z } from "zod";
import { generateSdkPublicTypes, SDK_PUBLIC_TYPES_PATH } from "../../scripts/gen-public-types";
import type { GraphQLClient } from "../../sdk/graphql";
import type * as api from "../../sdk/public-types";
import type { NoQueryInput, QueryInput, RestClient } from "../../sdk/rest";
import type * as s from "../../sdk/schemas";

type Out<S extends z.ZodType> = z.output<S>;
type In<S extends z.ZodType> = z.input<S>;
type Arg<F extends (...args: never[]) => unknown> = NonNullable<Parameters<F>[0]>;
type Result<F extends (...args: never[]) => unknown> = Awaited<ReturnType<F>>;

describe("the SDK's generated public types", () => {
  test("sdk/public-types.ts is what `npm run types` writes from the schemas", () => {
    expect(readFileSync(SDK_PUBLIC_TYPES_PATH, "utf8")).toBe(generateSdkPublicTypes());
  }, 60_000);

  test("each REST record, input and query is its schema's type", () => {
    expectTypeOf<api.Endpoint>().toEqualTypeOf<Out<typeof s.Endpoint>>();
    expectTypeOf<api.EndpointCreateInput>().toEqualTypeOf<In<typeof s.EndpointCreateInput>>();
    expectTypeOf<api.EndpointUpdateInput>().toEqualTypeOf<In<typeof s.EndpointUpdateInput>>();
    expectTypeOf<api.EndpointGetQuery>().toEqualTypeOf<QueryInput<typeof s.EndpointGetQuery>>();
    expectTypeOf<api.Template>().toEqualTypeOf<Out<typeof s.Template>>();
    expectTypeOf<api.TemplateCreateInput>().toEqualTypeOf<In<typeof s.TemplateCreateInput>>();
    expectTypeOf<api.TemplateUpdateInput>().toEqualTypeOf<In<typeof s.TemplateUpdateInput>>();
    expectTypeOf<api.TemplateListQuery>().toEqualTypeOf<QueryInput<typeof s.TemplateListQuery>>();
    expectTypeOf<api.NetworkVolume>().toEqualTypeOf<Out<typeof s.NetworkVolume>>();
    expectTypeOf<api.NetworkVolumeCreateInput>().toEqualTypeOf<In<typeof s.NetworkVolumeCreateInput>>();
    expectTypeOf<api.NetworkVolumeUpdateInput>().toEqualTypeOf<In<typeof s.NetworkVolumeUpdateInput>>();
    expectTypeOf<api.ContainerRegistryAuth>().toEqualTypeOf<Out<typeof s.ContainerRegistryAuth>>();
    expectTypeOf<api.ContainerRegistryAuthCreateInput>().toEqualTypeOf<
      In<typeof s.ContainerRegistryAuthCreateInput>
    >();
    expectTypeOf<api.Pod>().toEqualTypeOf<Out<typeof s.Pod>>();
    expectTypeOf<api.PodCreateInput>().toEqualTypeOf<In<typeof s.PodCreateInput>>();
    expectTypeOf<api.PodUpdateInput>().toEqualTypeOf<In<typeof s.PodUpdateInput>>();
    expectTypeOf<api.PodListQuery>().toEqualTypeOf<QueryInput<typeof s.PodListQuery>>();
    expectTypeOf<api.PodGetQuery>().toEqualTypeOf<QueryInput<typeof s.PodGetQuery>>();
    expectTypeOf<api.BillingRecord>().toEqualTypeOf<Out<typeof s.BillingRecord>>();
    expectTypeOf<api.NetworkVolumeBillingRecord>().toEqualTypeOf<Out<typeof s.NetworkVolumeBillingRecord>>();
    expectTypeOf<api.PodBillingQuery>().toEqualTypeOf<In<typeof s.PodBillingQuery>>();
    expectTypeOf<api.EndpointBillingQuery>().toEqualTypeOf<In<typeof s.EndpointBillingQuery>>();
    expectTypeOf<api.NetworkVolumeBillingQuery>().toEqualTypeOf<In<typeof s.NetworkVolumeBillingQuery>>();
  });

  test("each GraphQL result and input is its schema's type", () => {
    expectTypeOf<api.GqlEndpoint>().toEqualTypeOf<Out<typeof s.GqlEndpoint>>();
    expectTypeOf<api.GqlEndpointInput>().toEqualTypeOf<In<typeof s.GqlEndpointInput>>();
    expectTypeOf<api.ServerlessDiscount>().toEqualTypeOf<Out<typeof s.ServerlessDiscount>>();
    expectTypeOf<api.GqlPodTemplate>().toEqualTypeOf<Out<typeof s.GqlPodTemplate>>();
    expectTypeOf<api.GqlTemplateInput>().toEqualTypeOf<In<typeof s.GqlTemplateInput>>();
    expectTypeOf<api.GqlNetworkVolume>().toEqualTypeOf<Out<typeof s.GqlNetworkVolume>>();
    expectTypeOf<api.GqlNetworkVolumeCreateInput>().toEqualTypeOf<In<typeof s.GqlNetworkVolumeCreateInput>>();
    expectTypeOf<api.GqlNetworkVolumeUpdateInput>().toEqualTypeOf<In<typeof s.GqlNetworkVolumeUpdateInput>>();
    expectTypeOf<api.GqlRegistryAuthUpdateInput>().toEqualTypeOf<In<typeof s.GqlRegistryAuthUpdateInput>>();
    expectTypeOf<api.GqlSecret>().toEqualTypeOf<Out<typeof s.GqlSecret>>();
    expectTypeOf<api.GqlSecretCreateInput>().toEqualTypeOf<In<typeof s.GqlSecretCreateInput>>();
    expectTypeOf<api.GqlSecretValueUpdateInput>().toEqualTypeOf<In<typeof s.GqlSecretValueUpdateInput>>();
    expectTypeOf<api.GqlSecretDescriptionUpdateInput>().toEqualTypeOf<
      In<typeof s.GqlSecretDescriptionUpdateInput>
    >();
    expectTypeOf<api.GpuType>().toEqualTypeOf<Out<typeof s.GpuType>>();
    expectTypeOf<api.GqlGpuTypeFilter>().toEqualTypeOf<In<typeof s.GqlGpuTypeFilter>>();
    expectTypeOf<api.CpuFlavor>().toEqualTypeOf<Out<typeof s.CpuFlavor>>();
    expectTypeOf<api.GqlCpuFlavorInput>().toEqualTypeOf<In<typeof s.GqlCpuFlavorInput>>();
    expectTypeOf<api.DataCenter>().toEqualTypeOf<Out<typeof s.DataCenter>>();
  });

  test("the clients' signatures are the generated types", () => {
    type Rest = RestClient;
    expectTypeOf<Arg<Rest["endpoints"]["create"]>>().toEqualTypeOf<api.EndpointCreateInput>();
    expectTypeOf<Result<Rest["endpoints"]["get"]>>().toEqualTypeOf<api.Endpoint>();
    expectTypeOf<Arg<Rest["templates"]["update"]>>().toEqualTypeOf<string>();
    expectTypeOf<Parameters<Rest["templates"]["update"]>[1]>().toEqualTypeOf<api.TemplateUpdateInput>();
    expectTypeOf<Result<Rest["networkVolumes"]["list"]>>().toEqualTypeOf<api.NetworkVolume[]>();
    expectTypeOf<
      Arg<Rest["containerRegistryAuths"]["create"]>
    >().toEqualTypeOf<api.ContainerRegistryAuthCreateInput>();
    expectTypeOf<Arg<Rest["pods"]["create"]>>().toEqualTypeOf<api.PodCreateInput>();
    expectTypeOf<Arg<Rest["pods"]["list"]>>().toEqualTypeOf<api.PodListQuery>();
    expectTypeOf<Result<Rest["pods"]["stop"]>>().toEqualTypeOf<api.Pod>();
    expectTypeOf<Result<Rest["billing"]["pods"]>>().toEqualTypeOf<api.BillingRecord[]>();
    expectTypeOf<Result<Rest["billing"]["networkVolumes"]>>().toEqualTypeOf<
      api.NetworkVolumeBillingRecord[]
    >();
    type Gql = GraphQLClient;
    expectTypeOf<Arg<Gql["saveEndpoint"]>>().toEqualTypeOf<api.GqlEndpointInput>();
    expectTypeOf<Result<Gql["getEndpoint"]>>().toEqualTypeOf<api.GqlEndpoint | null>();
    expectTypeOf<Result<Gql["serverlessDiscount"]>>().toEqualTypeOf<api.ServerlessDiscount>();
    expectTypeOf<Arg<Gql["createSecret"]>>().toEqualTypeOf<api.GqlSecretCreateInput>();
    expectTypeOf<Result<Gql["listSecrets"]>>().toEqualTypeOf<api.GqlSecret[]>();
    expectTypeOf<Arg<Gql["gpuTypes"]>>().toEqualTypeOf<api.GqlGpuTypeFilter>();
    expectTypeOf<Result<Gql["dataCenters"]>>().toEqualTypeOf<api.DataCenter[]>();
  });

  test("collections without a query take none: only `{}` or nothing, not any object", () => {
    type Rest = RestClient;
    expectTypeOf<Parameters<Rest["networkVolumes"]["list"]>[0]>().toEqualTypeOf<NoQueryInput | undefined>();
    expectTypeOf<Parameters<Rest["networkVolumes"]["get"]>[1]>().toEqualTypeOf<NoQueryInput | undefined>();
    expectTypeOf<Parameters<Rest["containerRegistryAuths"]["list"]>[0]>().toEqualTypeOf<
      NoQueryInput | undefined
    >();
    // Call options given first (a common slip) and a made-up filter are refused by the checker.
    expectTypeOf<{ signal: AbortSignal }>().not.toExtend<NoQueryInput>();
    expectTypeOf<{ dataCenterId: string }>().not.toExtend<NoQueryInput>();
    expectTypeOf<{ dataCenterId?: string }>().not.toExtend<NoQueryInput>();
    expectTypeOf<Record<string, never>>().toExtend<NoQueryInput>();
  });

  test("the input types named in `schemas` are the generated plain types (they hold without zod)", () => {
    expectTypeOf<s.EndpointCreateInput>().toEqualTypeOf<api.EndpointCreateInput>();
    expectTypeOf<s.EndpointUpdateInput>().toEqualTypeOf<api.EndpointUpdateInput>();
    expectTypeOf<s.TemplateCreateInput>().toEqualTypeOf<api.TemplateCreateInput>();
    expectTypeOf<s.TemplateUpdateInput>().toEqualTypeOf<api.TemplateUpdateInput>();
    expectTypeOf<s.NetworkVolumeCreateInput>().toEqualTypeOf<api.NetworkVolumeCreateInput>();
    expectTypeOf<s.NetworkVolumeUpdateInput>().toEqualTypeOf<api.NetworkVolumeUpdateInput>();
    expectTypeOf<s.ContainerRegistryAuthCreateInput>().toEqualTypeOf<api.ContainerRegistryAuthCreateInput>();
    expectTypeOf<s.PodCreateInput>().toEqualTypeOf<api.PodCreateInput>();
    expectTypeOf<s.PodUpdateInput>().toEqualTypeOf<api.PodUpdateInput>();
    expectTypeOf<s.PodBillingQuery>().toEqualTypeOf<api.PodBillingQuery>();
    expectTypeOf<s.GqlEndpointInput>().toEqualTypeOf<api.GqlEndpointInput>();
    expectTypeOf<s.GqlTemplateInput>().toEqualTypeOf<api.GqlTemplateInput>();
    expectTypeOf<s.GqlSecretCreateInput>().toEqualTypeOf<api.GqlSecretCreateInput>();
    expectTypeOf<s.GqlGpuTypeFilter>().toEqualTypeOf<api.GqlGpuTypeFilter>();
    expectTypeOf<s.GqlCpuFlavorInput>().toEqualTypeOf<api.GqlCpuFlavorInput>();
    // Those no client sends are the schemas' input types too.
    expectTypeOf<api.GqlGpuLowestPriceInput>().toEqualTypeOf<In<typeof s.GqlGpuLowestPriceInput>>();
    expectTypeOf<api.GqlGpuAvailabilityInput>().toEqualTypeOf<In<typeof s.GqlGpuAvailabilityInput>>();
    expectTypeOf<api.GqlUpdateEndpointTemplateInput>().toEqualTypeOf<
      In<typeof s.GqlUpdateEndpointTemplateInput>
    >();
    expectTypeOf<api.GqlPodFindAndDeployOnDemandInput>().toEqualTypeOf<
      In<typeof s.GqlPodFindAndDeployOnDemandInput>
    >();
    expectTypeOf<api.GqlDeployCpuPodInput>().toEqualTypeOf<In<typeof s.GqlDeployCpuPodInput>>();
    expectTypeOf<api.GqlPodEditJobInput>().toEqualTypeOf<In<typeof s.GqlPodEditJobInput>>();
    expectTypeOf<api.GqlUserSettingsInput>().toEqualTypeOf<In<typeof s.GqlUserSettingsInput>>();
    expectTypeOf<s.GqlUserSettingsInput>().toEqualTypeOf<api.GqlUserSettingsInput>();
  });
});
