import { TEMPLATE_DEFAULTS } from "../../sdk/schemas/template";
import type { ServiceDeps } from "../deps";
import { definedOnly, inTransaction, sameEnv, storeOf } from "./common";
import { releaseTemplateChange } from "./endpoint";
import { invalid, notFound, ServiceError } from "./errors";
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
    env: {},
    ports: [...TEMPLATE_DEFAULTS.ports],
    readme: TEMPLATE_DEFAULTS.readme,
    containerRegistryAuthId: null,
    startSsh: false,
    startJupyter: false,
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

function checkSettings(
  deps: ServiceDeps,
  accountId: string,
  settings: TemplateSettings,
  selfId?: string,
): void {
  const store = storeOf(deps);
  const sameName = store.templateByName(accountId, settings.name);
  if (sameName && sameName.id !== selfId) {
    throw new ServiceError("CONFLICT", `name: a template named "${settings.name}" already exists`, {
      field: "name",
    });
  }
  const authId = settings.containerRegistryAuthId;
  if (authId && !store.registryAuths.get(accountId, authId)) {
    throw invalid("containerRegistryAuthId", `container registry auth ${authId} not found`);
  }
}

function refuseFixedChanges(existing: TemplateRecord, changes: TemplateChanges): void {
  for (const field of FIXED_FIELDS) {
    if (changes[field] !== undefined && changes[field] !== existing[field]) {
      throw invalid(field, "is not updatable; create a new template instead");
    }
  }
}

export function getTemplate(deps: ServiceDeps, accountId: string, templateId: string): TemplateRecord {
  const record = storeOf(deps).templates.get(accountId, templateId);
  if (!record) throw notFound("template", templateId);
  return record;
}

export function listTemplates(deps: ServiceDeps, accountId: string): TemplateRecord[] {
  return storeOf(deps).templates.list(accountId);
}

export function createTemplate(
  deps: ServiceDeps,
  accountId: string,
  changes: TemplateChanges,
): TemplateRecord {
  return inTransaction(deps, (s) => {
    const settings = { ...defaultSettings(), ...definedOnly(changes) };
    checkSettings(deps, accountId, settings);
    const record: TemplateRecord = {
      ...settings,
      id: deps.ids.template(),
      accountId,
      createdAt: deps.clock.now(),
    };
    s.putTemplate(record);
    return record;
  });
}

interface Saved {
  record: TemplateRecord;
  /** Endpoints whose version the save bumped; told once the transaction has committed. */
  released: string[];
}

function save(deps: ServiceDeps, existing: TemplateRecord, settings: TemplateSettings): Saved {
  checkSettings(deps, existing.accountId, settings, existing.id);
  const { id, accountId, createdAt } = existing;
  const record: TemplateRecord = { ...settings, id, accountId, createdAt };
  storeOf(deps).putTemplate(record);
  const released = runtimeChanged(existing, settings) ? releaseTemplateChange(deps, accountId, id) : [];
  return { record, released };
}

/** Lays a change over the settings `start` derives from the existing template, and saves the result. */
function changeTemplate(
  deps: ServiceDeps,
  accountId: string,
  templateId: string,
  changes: TemplateChanges,
  start: (existing: TemplateRecord) => TemplateSettings,
): TemplateRecord {
  const { record, released } = inTransaction(deps, () => {
    const existing = getTemplate(deps, accountId, templateId);
    const given = definedOnly(changes);
    refuseFixedChanges(existing, given);
    return save(deps, existing, { ...start(existing), ...given });
  });
  for (const endpointId of released) deps.events.emit("endpoint.saved", accountId, endpointId);
  return record;
}

/** REST PATCH: absent fields unchanged. category and isServerless cannot change. */
export function updateTemplate(
  deps: ServiceDeps,
  accountId: string,
  templateId: string,
  changes: TemplateChanges,
): TemplateRecord {
  return changeTemplate(deps, accountId, templateId, changes, (existing) => {
    const { id: _i, accountId: _a, createdAt: _c, ...current } = existing;
    return current;
  });
}

/** GraphQL saveTemplate with an id: a full replace; category and isServerless are kept when omitted. */
export function replaceTemplate(
  deps: ServiceDeps,
  accountId: string,
  templateId: string,
  changes: TemplateChanges,
): TemplateRecord {
  return changeTemplate(deps, accountId, templateId, changes, (existing) => ({
    ...defaultSettings(),
    category: existing.category,
    isServerless: existing.isServerless,
  }));
}

/** Refused while an endpoint uses the template. */
export function deleteTemplate(deps: ServiceDeps, accountId: string, templateId: string): void {
  inTransaction(deps, (s) => {
    getTemplate(deps, accountId, templateId);
    const users = s.endpointsUsingTemplate(accountId, templateId);
    if (users.length > 0) {
      throw new ServiceError(
        "IN_USE",
        `template ${templateId} is used by endpoint(s) ${users.map((e) => e.id).join(", ")}; delete or repoint them first`,
        { field: "templateId" },
      );
    }
    s.templates.delete(accountId, templateId);
  });
}

/** GraphQL deleteTemplate(templateName:) deletes BY NAME. */
export function deleteTemplateByName(deps: ServiceDeps, accountId: string, name: string): void {
  const record = storeOf(deps).templateByName(accountId, name);
  if (!record) throw notFound("template named", JSON.stringify(name));
  deleteTemplate(deps, accountId, record.id);
}
