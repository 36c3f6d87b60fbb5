import { TEMPLATE_DEFAULTS, uniqueItems } from "../../../sdk/schemas/defaults";
import type { Clock } from "../../clock";
import { invalid, notFound, resourceNotFound, ServiceError, shownId } from "../../errors";
import type { Ids } from "../../ids";
import type { ServiceEventBus } from "../../planes";
import type { ManagementStore } from "../store/store";
import { definedOnly, sameEnv, startCommand } from "./common";
import type { EndpointService } from "./endpoint";
import type { TemplateRecord } from "./records";

export type { TemplateRecord } from "./records";

export type TemplateSettings = Omit<TemplateRecord, "id" | "accountId" | "createdAt">;
export type TemplateChanges = Partial<TemplateSettings>;

/** Set at creation only. */
const FIXED_FIELDS = ["category", "isServerless"] as const;

function defaultSettings(): TemplateSettings {
  return {
    name: "",
    imageName: "",
    category: TEMPLATE_DEFAULTS.category,
    isServerless: TEMPLATE_DEFAULTS.isServerless,
    isPublic: TEMPLATE_DEFAULTS.isPublic,
    containerDiskInGb: TEMPLATE_DEFAULTS.containerDiskInGb,
    volumeInGb: TEMPLATE_DEFAULTS.volumeInGb,
    volumeMountPath: TEMPLATE_DEFAULTS.volumeMountPath,
    dockerEntrypoint: [],
    dockerStartCmd: [],
    dockerArgs: null,
    env: {},
    ports: [...TEMPLATE_DEFAULTS.ports],
    readme: TEMPLATE_DEFAULTS.readme,
    containerRegistryAuthId: null,
    startSsh: false,
    startJupyter: false,
    startScript: "",
  };
}

/** What workers run: a change to any of these is a new release of the endpoints using the template. */
function runtimeChanged(a: TemplateSettings, b: TemplateSettings): boolean {
  return (
    a.imageName !== b.imageName ||
    !sameEnv(a.env, b.env) ||
    a.dockerStartCmd.join("\u0000") !== b.dockerStartCmd.join("\u0000") ||
    a.dockerEntrypoint.join("\u0000") !== b.dockerEntrypoint.join("\u0000") ||
    a.ports.join(",") !== b.ports.join(",") ||
    a.containerDiskInGb !== b.containerDiskInGb ||
    a.volumeInGb !== b.volumeInGb ||
    a.volumeMountPath !== b.volumeMountPath ||
    a.containerRegistryAuthId !== b.containerRegistryAuthId
  );
}

function refuseFixedChanges(existing: TemplateRecord, changes: TemplateChanges): void {
  for (const field of FIXED_FIELDS) {
    if (changes[field] !== undefined && changes[field] !== existing[field]) {
      throw invalid(field, "is not updatable; create a new template instead");
    }
  }
}

/** A change laid over settings; the start command's two spellings kept in step (common.ts startCommand). */
function withChanges(settings: TemplateSettings, changes: TemplateChanges): TemplateSettings {
  const given = definedOnly(changes);
  // A port given twice is one port: kept once, in the order first given (REST and GraphQL alike).
  if (given.ports) given.ports = uniqueItems(given.ports);
  return { ...settings, ...given, ...startCommand(settings, changes) };
}

interface Saved {
  record: TemplateRecord;
  /** Endpoints whose version the save bumped; told once the transaction has committed. */
  released: string[];
}

/** The rules of templates, for REST and GraphQL alike. */
export class TemplateService {
  readonly #store: ManagementStore;
  readonly #clock: Clock;
  readonly #ids: Ids;
  readonly #events: ServiceEventBus;
  readonly #endpoints: EndpointService;

  constructor(deps: {
    store: ManagementStore;
    clock: Clock;
    ids: Ids;
    events: ServiceEventBus;
    endpoints: EndpointService;
  }) {
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#ids = deps.ids;
    this.#events = deps.events;
    this.#endpoints = deps.endpoints;
  }

  get(accountId: string, templateId: string): TemplateRecord {
    const record = this.#store.templates.get(accountId, templateId);
    if (!record) throw resourceNotFound("template", templateId);
    return record;
  }

  find(accountId: string, templateId: string): TemplateRecord | undefined {
    return this.#store.templates.get(accountId, templateId);
  }

  list(accountId: string): TemplateRecord[] {
    return this.#store.templates.list(accountId);
  }

  /**
   * The account's templates as REST GET /templates lists them: endpoint-bound ones (serverless
   * templates an endpoint uses) only when asked for, as the real service's includeEndpointBoundTemplates.
   */
  listed(accountId: string, options: { endpointBound: boolean }): TemplateRecord[] {
    const templates = this.list(accountId);
    if (options.endpointBound) return templates;
    const bound = new Set(this.#store.endpoints.list(accountId).map((e) => e.templateId));
    return templates.filter((t) => !(t.isServerless && bound.has(t.id)));
  }

  create(accountId: string, changes: TemplateChanges): TemplateRecord {
    return this.#store.transaction(() => {
      const settings = withChanges(defaultSettings(), changes);
      this.#check(accountId, settings);
      const record: TemplateRecord = {
        ...settings,
        id: this.#ids.template(),
        accountId,
        createdAt: this.#clock.now(),
      };
      this.#store.putTemplate(record);
      return record;
    });
  }

  /** REST PATCH: absent fields unchanged. category and isServerless cannot change. */
  update(accountId: string, templateId: string, changes: TemplateChanges): TemplateRecord {
    return this.#change(accountId, templateId, changes, (existing) => {
      const { id: _i, accountId: _a, createdAt: _c, ...current } = existing;
      return current;
    });
  }

  /**
   * GraphQL saveTemplate with an id: a full replace; category and isServerless are kept when omitted,
   * and dockerEntrypoint, which saveTemplate's input cannot express, is kept (as saveEndpoint keeps
   * the REST-only fields): a GraphQL read-then-save must not drop an entrypoint set through REST.
   */
  replace(accountId: string, templateId: string, changes: TemplateChanges): TemplateRecord {
    return this.#change(accountId, templateId, changes, (existing) => ({
      ...defaultSettings(),
      category: existing.category,
      isServerless: existing.isServerless,
      dockerEntrypoint: existing.dockerEntrypoint,
    }));
  }

  /** Refused while an endpoint or a pod uses the template. */
  delete(accountId: string, templateId: string): void {
    this.#store.transaction(() => {
      this.get(accountId, templateId);
      const users = this.#store.endpointsUsingTemplate(accountId, templateId);
      if (users.length > 0) {
        throw new ServiceError(
          "IN_USE",
          `template ${templateId} is used by endpoint(s) ${users.map((e) => e.id).join(", ")}; delete or repoint them first`,
          { field: "templateId" },
        );
      }
      const pods = this.#store.podIdsUsing(accountId, "template_id", templateId);
      if (pods.length > 0) {
        throw new ServiceError(
          "IN_USE",
          `template ${templateId} is used by pod(s) ${pods.join(", ")}; terminate them first`,
          {
            field: "templateId",
          },
        );
      }
      this.#store.templates.delete(accountId, templateId);
    });
  }

  /** GraphQL deleteTemplate(templateName:) deletes BY NAME. */
  deleteByName(accountId: string, name: string): void {
    // A name finds the template stored under it as given, else the one of the same name in the
    // canonical spelling (trimmed, composed), whichever way it was stored.
    const record = this.#store.templateByName(accountId, name);
    // A name is at most 191 characters: quoted and escaped, well within 1,200.
    if (!record) throw notFound("template named", JSON.stringify(name), 1_200, "templateName");
    this.delete(accountId, record.id);
  }

  /** Lays a change over the settings `start` derives from the existing template, and saves the result. */
  #change(
    accountId: string,
    templateId: string,
    changes: TemplateChanges,
    start: (existing: TemplateRecord) => TemplateSettings,
  ): TemplateRecord {
    const { record, released } = this.#store.transaction(() => {
      const existing = this.get(accountId, templateId);
      refuseFixedChanges(existing, definedOnly(changes));
      return this.#save(existing, withChanges(start(existing), changes));
    });
    for (const endpointId of released) this.#events.emit("endpoint.saved", accountId, endpointId);
    return record;
  }

  #save(existing: TemplateRecord, settings: TemplateSettings): Saved {
    this.#check(existing.accountId, settings, existing.id);
    const { id, accountId, createdAt } = existing;
    const record: TemplateRecord = { ...settings, id, accountId, createdAt };
    this.#store.putTemplate(record);
    const released = runtimeChanged(existing, settings) ? this.#endpoints.releaseTemplate(accountId, id) : [];
    return { record, released };
  }

  #check(accountId: string, settings: TemplateSettings, selfId?: string): void {
    const sameName = this.#store.templateByName(accountId, settings.name);
    if (sameName && sameName.id !== selfId) {
      throw new ServiceError("CONFLICT", `name: a template named "${settings.name}" already exists`, {
        field: "name",
      });
    }
    const authId = settings.containerRegistryAuthId;
    if (authId && !this.#store.registryAuths.get(accountId, authId)) {
      throw invalid("containerRegistryAuthId", `container registry auth ${shownId(authId)} not found`);
    }
  }
}
