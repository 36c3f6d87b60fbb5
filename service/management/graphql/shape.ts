import { formatDockerArgs } from "../../../sdk/schemas/docker-args";
import type { KeyValue } from "../../../sdk/schemas/template";
import { type PodView, podName } from "../model/pod";
import type { TemplateRecord } from "../model/records";

/** Records to GraphQL objects where the SDL's shape differs from the record's. Pure functions. */

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** GraphQL env: [{key, value}] where records hold a map. */
export const envList = (env: Record<string, string>): KeyValue[] =>
  Object.entries(env).map(([key, value]) => ({ key, value }));

/** dockerArgs is the start command as one string (each argument shell-quoted); ports a comma list. */
export function gqlTemplate(t: TemplateRecord) {
  return {
    ...t,
    dockerArgs: formatDockerArgs(t.dockerStartCmd),
    env: envList(t.env),
    ports: t.ports.join(","),
  };
}

export function gqlPod(pod: PodView) {
  const { worker } = pod;
  return {
    id: worker.id,
    name: podName(pod),
    desiredStatus: worker.desiredStatus,
    endpointId: worker.endpointId,
    imageName: worker.imageName,
    templateId: worker.templateId,
    gpuCount: worker.gpuCount,
    lastStartedAt: iso(worker.lastStartedAt),
  };
}
