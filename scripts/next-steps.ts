/**
 * Where `npm start` ends its account: what to read or run next. This is the one place for them: the
 * local console's address (of the service that runs while the list is printed), the logs command,
 * the docs.
 */
import type { NextStep } from "./progress";

export interface ServiceAddresses {
  queueUrl: string;
}

/** Files in the repository that the list points to (a test checks that they exist). */
export const DOCS_POINTED_TO = ["docs/_index.md", "docs/api-docs", "README.md"] as const;

export function nextSteps(service: ServiceAddresses): NextStep[] {
  const base = service.queueUrl.replace(/\/+$/, "");
  return [
    {
      label: "console",
      text: `${base}/console/ (paste the account key; served by any running service: RUNPODKIT_API_KEYS=<key> npm run serve -- --port 8080, then http://127.0.0.1:8080/console/)`,
    },
    {
      // The address this run's service used (a free port, not 8080), and how `logs` finds a service
      // started with `npm run serve` (the address it writes beside its store), as the README says.
      label: "logs",
      text: `runpodkit logs <endpoint id> --url ${base}/v2 [--worker <id>] [--job <id>] [--follow] (reads RUNPOD_API_KEY; this run's service, while it runs); for a service of npm run serve in this directory, no --url: it is found beside its store (--data, default .data/runpodkit.sqlite)`,
    },
    { label: "docs", text: "docs/_index.md (overview), docs/api-docs/ (a page per resource), README.md" },
    {
      label: "again",
      text: "npm run serve, then pulumi up at the repository root (Pulumi.yaml says how) or in examples/",
    },
  ];
}
