#!/usr/bin/env node
// First: on an unsupported Node.js, one line naming the required version instead of a crash below.
import "../sdk/node-guard";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startService } from "./index";
import { parseHandlerFlag } from "./jobs/workers/launch";
import { LOGS_USAGE, logsCommand } from "./logs-command";

const USAGE = `usage: runpodkit --port <p> --api-key <k> [--api-key <k2> ...] [--data <file>|:memory:] [--handler <image>=<module-or-command> ...]
       ${LOGS_USAGE.replace(/^usage: /, "")}`;
const DEFAULT_DATA = join(process.cwd(), ".data", "runpodkit.sqlite");

/**
 * The CLI: `npm run serve -- --port 8080 --api-key k1 --api-key k2 [--data file]` serves in the
 * foreground; `runpodkit logs <endpoint id> ...` reads an endpoint's worker logs from a running service.
 */
async function main(): Promise<void> {
  if (process.argv[2] === "logs") return logsCommand(process.argv.slice(3));
  const { values } = parseArgs({
    options: {
      port: { type: "string", default: "0" },
      "api-key": { type: "string", multiple: true },
      data: { type: "string", default: DEFAULT_DATA },
      handler: { type: "string", multiple: true },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const port = Number(values.port);
  const apiKeys = values["api-key"] ?? [];
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--port: not a port number\n${USAGE}`);
  if (apiKeys.length === 0) throw new Error(`--api-key: at least one is required\n${USAGE}`);

  // Which workers a template's imageName starts: a handler module or a command line, per image.
  const handlers = Object.fromEntries((values.handler ?? []).map(parseHandlerFlag));
  const service = await startService({ apiKeys, port, data: values.data, config: { jobs: { handlers } } });
  // One line, so scripts can read the three base URLs.
  console.log(
    `runpodkit service ready: rest=${service.restUrl} graphql=${service.graphqlUrl} queue=${service.queueUrl}`,
  );

  const stop = (signal: string) => {
    service.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(
          `runpodkit: error while closing on ${signal}: ${error instanceof Error ? error.message : error}`,
        );
        process.exit(1);
      },
    );
  };
  process.once("SIGINT", () => stop("SIGINT"));
  process.once("SIGTERM", () => stop("SIGTERM"));
}

main().catch((error: unknown) => {
  console.error(`runpodkit: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
