import { uniqueItems } from "../../sdk/schemas/defaults";
import type { Clock } from "../clock";
import type { Accounts } from "../edge/auth";
import type { Ids } from "../ids";
import type { ServiceEventBus, WorkerRegistry } from "../planes";
import { BillingService, type WorkerUsageLedger } from "./model/billing";
import { RegistryAuthService } from "./model/container-registry-auth";
import { canonicalEndpoint, EndpointService } from "./model/endpoint";
import { NetworkVolumeService } from "./model/network-volume";
import { PodService } from "./model/pod";
import { SecretService } from "./model/secret";
import { TemplateService } from "./model/template";
import { UserService } from "./model/user";
import type { ManagementStore } from "./store/store";

export interface ManagementDeps {
  store: ManagementStore;
  clock: Clock;
  ids: Ids;
  /** Where endpoint changes are announced (the job plane listens). */
  events: ServiceEventBus;
  /** The job plane's workers, shown as pods and billed. */
  workers: WorkerRegistry;
  /** The stopped workers' running time (the job plane reports to it), billed with the running ones. */
  usage: WorkerUsageLedger;
}

/** What the management wires (REST under /v1, GraphQL at /graphql) are registered with. */
export interface ManagementWireDeps {
  accounts: Accounts;
  management: Management;
  /** Max JSON body of a management request, bytes. */
  bodyLimit: number;
  /**
   * Called once after a first request loaded what the wires load on first use (REST's routes, the
   * GraphQL engine): startService passes its start-up memory release (heap.ts releaseStartupMemory),
   * as that load's garbage is otherwise kept by an idle heap.
   */
  afterLoad?: () => void;
}

/**
 * The management plane's rules, one service per resource, each built from only what it uses. The
 * wires (rest/, graphql/) parse, call one of these and shape the reply; neither holds a rule.
 */
export class Management {
  readonly endpoints: EndpointService;
  readonly templates: TemplateService;
  readonly networkVolumes: NetworkVolumeService;
  readonly registryAuths: RegistryAuthService;
  readonly pods: PodService;
  readonly billing: BillingService;
  readonly users: UserService;
  readonly secrets: SecretService;

  constructor({ store, clock, ids, events, workers, usage }: ManagementDeps) {
    store.rewriteOnce("canonical-lists", () => {
      store.endpoints.rewrite(canonicalEndpoint);
      store.templates.rewrite(withPortsOnce);
      store.pods.rewrite(withPortsOnce);
    });
    this.endpoints = new EndpointService({ store, clock, ids, events });
    this.templates = new TemplateService({ store, clock, ids, events, endpoints: this.endpoints });
    this.networkVolumes = new NetworkVolumeService({ store, clock, ids });
    this.registryAuths = new RegistryAuthService({ store, clock, ids });
    this.pods = new PodService({ store, clock, ids, workers });
    this.billing = new BillingService({ store, clock, workers, usage });
    this.users = new UserService({ store });
    this.secrets = new SecretService({ store, clock, ids });
  }
}

/** A template or pod stored with a port given twice, with each port once; undefined when it has none twice. */
function withPortsOnce<T extends { ports?: string[] | undefined }>(record: T): T | undefined {
  if (!record.ports) return undefined;
  const ports = uniqueItems(record.ports);
  return ports.length === record.ports.length ? undefined : { ...record, ports };
}
