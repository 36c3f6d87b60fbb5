import { createServer, type Server, connect as tcpConnect } from "node:net";

/** libuv's TCP handle, as Node's own net module uses it: bind without listen has no public API. */
interface TcpHandle {
  bind(address: string, port: number): number;
  getsockname(out: { port?: number }): number;
  close(): void;
}
interface TcpWrap {
  TCP: new (type: number) => TcpHandle;
  constants: { SERVER: number };
}

/**
 * A port on 127.0.0.1 bound but not listening: connecting to it is refused (no listener), and while
 * it is held no other process gets it (bind(0) skips bound ports; a plain listen on it fails), as a
 * port taken from the OS and let go could be, by the suite's other forks, before the test used it.
 */
export interface HeldPort {
  readonly port: number;
  /** Makes `server` listen on this very socket: refused until now, served from now on. */
  listen(server: Server): Promise<void>;
  /** Lets the port go (a no-op once a server listens on it: closing that server does). */
  close(): void;
}

export function holdPort(): HeldPort {
  const { TCP, constants } = (process as unknown as { binding(name: "tcp_wrap"): TcpWrap }).binding(
    "tcp_wrap",
  );
  const handle = new TCP(constants.SERVER);
  const out: { port?: number } = {};
  const failed = handle.bind("127.0.0.1", 0) || handle.getsockname(out);
  if (failed || !out.port) {
    handle.close();
    throw new Error(`holdPort: binding 127.0.0.1:0 failed (errno ${failed})`);
  }
  const port = out.port;
  let owned = true;
  return {
    port,
    listen(server) {
      owned = false;
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(handle, () => {
          server.off("error", reject);
          resolve();
        });
      });
    },
    close() {
      if (owned) handle.close();
      owned = false;
    },
  };
}

/** Plain TCP forwarding from the held port to `to`'s host and port, served once this resolves. */
export function relayTo(held: HeldPort, to: string): Promise<Server> {
  const target = new URL(to);
  const relay = createServer((socket) => {
    const upstream = tcpConnect(Number(target.port), target.hostname);
    socket.pipe(upstream).pipe(socket);
    socket.on("error", () => upstream.destroy());
    upstream.on("error", () => socket.destroy());
  });
  return held.listen(relay).then(() => relay);
}
