/**
 * The gRPC side of the engine that a program talks to: the ResourceMonitor (registrations, reads,
 * feature probes, shutdown) and the Engine service (logs, root resource), on one local server.
 * Each call is translated to the Deployment; anything else answers UNIMPLEMENTED, which the SDK tolerates.
 */
import * as grpc from "@grpc/grpc-js";
import type { Deployment, ReadRequest, RegisterRequest } from "./deployment";
import { EngineError } from "./errors";
import type { LogSeverity, LogSink } from "./log";
import { Empty, engineGrpc, enginePb, grpcOptions, resourceGrpc, resourcePb, Struct } from "./proto";
import type { PropertyMap } from "./values";

export interface MonitorContext {
  project: string;
  stack: string;
  dryRun: boolean;
  config: Record<string, string>;
  secretKeys: string[];
  deployment: Deployment;
  log: LogSink;
  /** Keep the SDK's debug messages (like `pulumi --debug`); they print whole RPC payloads, secrets included. */
  debugLogs: boolean;
  /** Told to the program (GetDeploymentInfo), as the CLI tells it its --parallel. */
  parallel: number;
}

const SUPPORTED_FEATURES = new Map<string, resourcePb.ResourceMonitorFeature>([
  ["secrets", resourcePb.ResourceMonitorFeature.RESOURCE_MONITOR_FEATURE_SECRETS],
]);

export class MonitorServer {
  private rootUrn = "";

  private constructor(
    private readonly server: grpc.Server,
    readonly address: string,
  ) {}

  static async start(ctx: MonitorContext): Promise<MonitorServer> {
    const server = new grpc.Server(grpcOptions);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    const monitor = new MonitorServer(server, `127.0.0.1:${port}`);
    server.addService(resourceGrpc.ResourceMonitorService, monitor.resourceMonitor(ctx));
    server.addService(engineGrpc.EngineService, monitor.engine(ctx));
    return monitor;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.tryShutdown(() => resolve()));
  }

  private resourceMonitor(ctx: MonitorContext): resourceGrpc.IResourceMonitorServer {
    const { deployment } = ctx;
    return {
      getDeploymentInfo: (_call, callback) => {
        const info = new resourcePb.DeploymentInfo();
        info.setProject(ctx.project);
        info.setStack(ctx.stack);
        info.setOrganization("organization");
        for (const [k, v] of Object.entries(ctx.config)) info.getConfigMap().set(k, v);
        info.setConfigsecretkeysList(ctx.secretKeys);
        info.setDryrun(ctx.dryRun);
        info.setParallel(ctx.parallel);
        info.setSupportedfeaturesList([...SUPPORTED_FEATURES.values()]);
        callback(null, info);
      },
      supportsFeature: (call, callback) => {
        const res = new resourcePb.SupportsFeatureResponse();
        res.setHassupport(SUPPORTED_FEATURES.has(call.request.getId()));
        callback(null, res);
      },
      registerResource: (call, callback) => {
        const req = call.request;
        deployment.register(toRegisterRequest(req)).then((result) => {
          const res = new resourcePb.RegisterResourceResponse();
          res.setUrn(result.urn);
          res.setId(result.id);
          res.setObject(Struct.fromJavaScript(result.outputs));
          res.setStable(result.stable);
          for (const [key, deps] of req.getPropertydependenciesMap().entries()) {
            const echoed = new resourcePb.RegisterResourceResponse.PropertyDependencies();
            echoed.setUrnsList(deps.getUrnsList());
            res.getPropertydependenciesMap().set(key, echoed);
          }
          res.setResult(resourcePb.Result.SUCCESS);
          callback(null, res);
        }, failWith(callback));
      },
      registerResourceOutputs: (call, callback) => {
        const outputs = (call.request.getOutputs()?.toJavaScript() ?? {}) as PropertyMap;
        deployment
          .registerOutputs(call.request.getUrn(), outputs)
          .then(() => callback(null, new Empty()), failWith(callback));
      },
      readResource: (call, callback) => {
        deployment.read(toReadRequest(call.request)).then((result) => {
          const res = new resourcePb.ReadResourceResponse();
          res.setUrn(result.urn);
          res.setProperties(Struct.fromJavaScript(result.outputs));
          res.setResult(resourcePb.Result.SUCCESS);
          callback(null, res);
        }, failWith(callback));
      },
      invoke: (call, callback) => {
        // Dynamic providers expose no functions; a real provider would answer the same for an unknown token.
        callback(
          { code: grpc.status.UNIMPLEMENTED, details: `unknown function ${call.request.getTok()}` },
          null,
        );
      },
      signalAndWaitForShutdown: (_call, callback) => {
        deployment.idle().then(() => callback(null, new Empty()));
      },
      call: unimplemented("Call"),
      existsResource: unimplemented("ExistsResource"),
      registerStackTransform: unimplemented("RegisterStackTransform"),
      registerStackInvokeTransform: unimplemented("RegisterStackInvokeTransform"),
      registerResourceHook: unimplemented("RegisterResourceHook"),
      registerErrorHook: unimplemented("RegisterErrorHook"),
      registerPackage: unimplemented("RegisterPackage"),
    };
  }

  private engine(ctx: MonitorContext): engineGrpc.IEngineServer {
    return {
      log: (call, callback) => {
        const req = call.request;
        const urn = req.getUrn();
        if (req.getSeverity() === enginePb.LogSeverity.DEBUG && !ctx.debugLogs) {
          callback(null, new Empty());
          return;
        }
        ctx.log({
          source: "program",
          severity: severityName(req.getSeverity()),
          message: req.getMessage(),
          ...(urn ? { urn } : {}),
        });
        callback(null, new Empty());
      },
      getRootResource: (_call, callback) => {
        const res = new enginePb.GetRootResourceResponse();
        res.setUrn(this.rootUrn);
        callback(null, res);
      },
      setRootResource: (call, callback) => {
        this.rootUrn = call.request.getUrn();
        callback(null, new enginePb.SetRootResourceResponse());
      },
      requirePulumiVersion: (_call, callback) => callback(null, new enginePb.RequirePulumiVersionResponse()),
      startDebugging: unimplemented("StartDebugging"),
    };
  }
}

function toRegisterRequest(req: resourcePb.RegisterResourceRequest): RegisterRequest {
  const propertyDependencies: Record<string, string[]> = {};
  for (const [key, deps] of req.getPropertydependenciesMap().entries())
    propertyDependencies[key] = deps.getUrnsList();
  return {
    type: req.getType(),
    name: req.getName(),
    parent: req.getParent(),
    custom: req.getCustom(),
    object: (req.getObject()?.toJavaScript() ?? {}) as PropertyMap,
    dependencies: req.getDependenciesList(),
    propertyDependencies,
    deleteBeforeReplace: req.getDeletebeforereplacedefined() ? req.getDeletebeforereplace() : undefined,
    ignoreChanges: req.getIgnorechangesList(),
    // The SDK resolves each alias to a URN itself, since this monitor does not offer "aliasSpecs".
    aliases: req.getAliasurnsList(),
    replaceOnChanges: req.getReplaceonchangesList(),
    additionalSecretOutputs: req.getAdditionalsecretoutputsList(),
    protect: req.getProtect() ?? false,
    retainOnDelete: req.getRetainondelete() ?? false,
    importId: req.getImportid(),
    customTimeouts: {
      create: req.getCustomtimeouts()?.getCreate() ?? "",
      update: req.getCustomtimeouts()?.getUpdate() ?? "",
      delete: req.getCustomtimeouts()?.getDelete() ?? "",
    },
  };
}

function toReadRequest(req: resourcePb.ReadResourceRequest): ReadRequest {
  return {
    type: req.getType(),
    name: req.getName(),
    parent: req.getParent(),
    id: req.getId(),
    properties: (req.getProperties()?.toJavaScript() ?? {}) as PropertyMap,
    dependencies: req.getDependenciesList(),
    additionalSecretOutputs: req.getAdditionalsecretoutputsList(),
  };
}

function failWith<T>(callback: grpc.sendUnaryData<T>): (error: unknown) => void {
  return (error) => {
    const details = error instanceof EngineError || error instanceof Error ? error.message : String(error);
    callback({ code: grpc.status.UNKNOWN, details }, null);
  };
}

function unimplemented<Req, Res>(name: string): grpc.handleUnaryCall<Req, Res> {
  return (_call, callback) =>
    callback(
      { code: grpc.status.UNIMPLEMENTED, details: `${name} is not implemented by the test engine` },
      null,
    );
}

function severityName(severity: enginePb.LogSeverity): LogSeverity {
  switch (severity) {
    case enginePb.LogSeverity.DEBUG:
      return "debug";
    case enginePb.LogSeverity.WARNING:
      return "warning";
    case enginePb.LogSeverity.ERROR:
      return "error";
    default:
      return "info";
  }
}
