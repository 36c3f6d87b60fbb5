/**
 * A CPU pod for a notebook, stopped when not needed
 * Set `desiredStatus` to `EXITED` to stop paying for it without losing its volume; `RUNNING` starts it
 * again. The GPU types, CPU flavors and data centers on offer come from `getGpuTypes`,
 * `getCpuFlavors` and `getDataCenters`.
 */
import * as pulumi from "@pulumi/pulumi";
import { Pod } from "runpodkit";

const config = new pulumi.Config();

const notebook = new Pod("notebook", {
  imageName: "jupyter/base-notebook:latest",
  computeType: "CPU",
  cpuFlavorIds: ["cpu3c"],
  vcpuCount: 2,
  volumeInGb: 20,
  ports: ["8888/http"],
  desiredStatus: config.getBoolean("paused") ? "EXITED" : "RUNNING",
});

export const podId = notebook.id;
export const costPerHr = notebook.costPerHr;
