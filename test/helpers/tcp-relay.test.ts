import { createServer, type Server, connect as tcpConnect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { type HeldPort, holdPort, relayTo } from "./tcp-relay";

/** How a connection to 127.0.0.1:`port` goes: "connected", or the error's code. */
function connectTo(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = tcpConnect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve("connected");
    });
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? String(error)));
  });
}

function listenOnZero(server: Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      resolve(typeof address === "object" && address ? address.port : 0);
    }),
  );
}

describe("holdPort", () => {
  const held: HeldPort[] = [];
  const servers: Server[] = [];
  afterEach(async () => {
    for (const port of held.splice(0)) port.close();
    await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
  });

  it("refuses connections while held, then serves the server the test makes listen there", async () => {
    const port = holdPort();
    held.push(port);
    expect(await connectTo(port.port)).toBe("ECONNREFUSED");
    const target = createServer((socket) => socket.end("from the target"));
    servers.push(target);
    const targetPort = await listenOnZero(target);
    const relay = await relayTo(port, `http://127.0.0.1:${targetPort}`);
    servers.push(relay);
    const reply = await new Promise<string>((resolve, reject) => {
      let text = "";
      const socket = tcpConnect(port.port, "127.0.0.1");
      socket.on("data", (chunk: Buffer) => {
        text += chunk.toString();
      });
      socket.once("end", () => resolve(text));
      socket.once("error", reject);
    });
    expect(reply).toBe("from the target");
  });

  it("is never handed to another listener on port 0 while held (as the suite's other forks' servers are)", async () => {
    // Before, the port was let go at once: of 2,000 port-0 listeners, 60 got one of 200 such ports
    // in a run, and a test's "nothing listens there" was then wrong.
    for (let n = 0; n < 200; n++) held.push(holdPort());
    const ours = new Set(held.map((port) => port.port));
    const handedOut: number[] = [];
    for (let n = 0; n < 2_000; n++) {
      const other = createServer();
      const port = await listenOnZero(other);
      await new Promise((resolve) => other.close(resolve));
      if (ours.has(port)) handedOut.push(port);
    }
    expect(handedOut).toEqual([]);
    for (const port of held.slice(0, 5)) expect(await connectTo(port.port)).toBe("ECONNREFUSED");
  });
});
