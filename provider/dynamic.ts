import { dirname, relative } from "node:path";
import type * as pulumi from "@pulumi/pulumi";
import { PACKAGE_NAME, packageManifest } from "../sdk/package-manifest";

export { PACKAGE_NAME, packageVersion } from "../sdk/package-manifest";

/**
 * The specifier by which Pulumi's provider host loads one of this package's files: by package path,
 * never by absolute path, so state written on one machine works on another. Installed from npm this is
 * `runpodkit/dist/provider/<file>` (resolved from the program folder's node_modules); in a checkout
 * running TypeScript sources it is `runpodkit/provider/<file>`, which the test helper makes resolvable.
 */
export function packageSpecifier(file: string): string {
  const { root } = packageManifest(dirname(file));
  const path = relative(root, file)
    .split("\\")
    .join("/")
    .replace(/\.[cm]?[jt]s$/, "");
  return `${PACKAGE_NAME}/${path}`;
}

/**
 * The provider object Pulumi serializes into the state. It holds two strings and forwards each method
 * to the implementation, which the host `require`s by package path on first use. Nothing else is
 * captured: no client, no agent, no Map, no credential (those live in the implementation module, in
 * the host process only). One instance per resource type, so Pulumi serializes it once.
 */
export function forwardingProvider(specifier: string, exportName: string): pulumi.dynamic.ResourceProvider {
  const load = (): pulumi.dynamic.ResourceProvider => require(specifier)[exportName];
  return {
    configure: async (req) => {
      await load().configure?.(req);
    },
    check: (olds, news) => {
      const target = load();
      return target.check ? target.check(olds, news) : Promise.resolve({ inputs: news });
    },
    diff: (id, olds, news) => {
      const target = load();
      return target.diff ? target.diff(id, olds, news) : Promise.resolve({});
    },
    create: (inputs) => load().create(inputs),
    read: (id, props) => {
      const target = load();
      return target.read ? target.read(id, props) : Promise.resolve({ id, props });
    },
    update: (id, olds, news) => {
      const target = load();
      return target.update ? target.update(id, olds, news) : Promise.resolve({ outs: news });
    },
    delete: async (id, props) => {
      await load().delete?.(id, props);
    },
  };
}
