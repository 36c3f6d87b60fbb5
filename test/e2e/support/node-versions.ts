/**
 * The Node.js versions the package is proven on: the lowest one package.json `engines` admits (run
 * from the npm `node` package, engine/package.ts installNode) and the project's own Node 24.
 */
export const LOWEST_NODE = "22.19.0";
