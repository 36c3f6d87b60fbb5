import { createServer, type Server, connect as tcpConnect } from "node:net";

/** A port nothing listens on yet (taken from the OS, then let go): connecting to it is refused. */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return typeof address === "object" && address ? address.port : 0;
}

/** Plain TCP forwarding from `port` on 127.0.0.1 to `to`'s host and port, opened when called. */
export function relayTo(port: number, to: string): Promise<Server> {
  const target = new URL(to);
  const relay = createServer((socket) => {
    const upstream = tcpConnect(Number(target.port), target.hostname);
    socket.pipe(upstream).pipe(socket);
    socket.on("error", () => upstream.destroy());
    upstream.on("error", () => socket.destroy());
  });
  return new Promise((resolve) => relay.listen(port, "127.0.0.1", () => resolve(relay)));
}
