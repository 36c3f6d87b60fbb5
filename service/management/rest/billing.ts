import {
  BillingRecords,
  EndpointBillingQuery,
  NetworkVolumeBillingQuery,
  NetworkVolumeBillingRecords,
  PodBillingQuery,
} from "../../../sdk/schemas/billing";
import { manyList } from "../../../sdk/schemas/common";
import { type RestRoute, route } from "./route";

const TAG = "billing";

export const billingRoutes: RestRoute[] = [
  route(
    {
      method: "GET",
      url: "/billing/pods",
      operationId: "PodBilling",
      tag: TAG,
      summary: "Pod compute billing per time bucket (rented pods and serverless workers)",
      query: PodBillingQuery,
      response: BillingRecords,
    },
    (c) => {
      const { gpuTypeId, grouping, ...rest } = c.query;
      return c.management.billing.compute(c.accountId, {
        ...rest,
        grouping: grouping ?? "gpuTypeId",
        gpuTypeIds: manyList(gpuTypeId),
        includeRentedPods: true,
      });
    },
  ),
  route(
    {
      method: "GET",
      url: "/billing/endpoints",
      operationId: "EndpointBilling",
      tag: TAG,
      summary: "Endpoint compute billing per time bucket",
      query: EndpointBillingQuery,
      response: BillingRecords,
    },
    (c) => {
      const { gpuTypeId, dataCenterId, grouping, ...rest } = c.query;
      return c.management.billing.compute(c.accountId, {
        ...rest,
        grouping: grouping ?? "endpointId",
        gpuTypeIds: manyList(gpuTypeId),
        dataCenterIds: manyList(dataCenterId),
      });
    },
  ),
  route(
    {
      method: "GET",
      url: "/billing/networkvolumes",
      operationId: "NetworkVolumeBilling",
      tag: TAG,
      summary: "Network volume storage billing per time bucket",
      query: NetworkVolumeBillingQuery,
      response: NetworkVolumeBillingRecords,
    },
    (c) => c.management.billing.storage(c.accountId, c.query),
  ),
];
