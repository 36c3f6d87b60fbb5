/**
 * The module Pulumi's provider host loads for a NetworkVolume, by this package path, for every state
 * any runpodkit version wrote (the serialized provider names it). Never rename or remove it.
 */
// First: on an unsupported Node.js, one line naming the required version instead of a crash below.
import "../sdk/node-guard";

export { networkVolumeProvider } from "./network-volume";
