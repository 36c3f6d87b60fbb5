/**
 * The module Pulumi's provider host loads for a Pod, by this package path, for every state any
 * runpodkit version wrote (the serialized provider names it). Never rename or remove it.
 */
export { podProvider } from "./pod";
