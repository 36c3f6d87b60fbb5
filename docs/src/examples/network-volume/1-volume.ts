/**
 * A volume in one data center
 * Mount it on an endpoint with `networkVolumeId`. Raising `size` grows it in place; it cannot shrink.
 */
import { NetworkVolume } from "runpodkit";

const volume = new NetworkVolume("datasets", { size: 50, dataCenterId: "US-KS-2" });

export const volumeId = volume.id;
