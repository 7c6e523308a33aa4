// A TCP relay between infracat and its PostgreSQL that a test can cut: a network partition,
// as opposed to a stopped server. A stopped server refuses connections and closes the ones
// it had, which a client notices at once; across a partition nothing arrives and nothing is
// refused, so only the client's own time-outs end a wait.
// While cut, no byte crosses in either direction and no close does; connections opened
// meanwhile are accepted (the kernel's handshake) and then hear nothing. On heal, what was
// held back is delivered in order, closes included, and held connections reach the server:
// as TCP's retransmissions do once a partition ends.
import net from 'node:net';

export interface TcpLink {
  /** Connect here instead of the target. */
  port: number;
  /** Starts a partition: nothing crosses until heal(). */
  cut(): void;
  /** Ends the partition. */
  heal(): void;
  close(): Promise<void>;
}

export async function startTcpLink(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpLink> {
  let cut = false;
  /** What heal() delivers: held data and closes, in the order they happened. */
  let held: (() => void)[] = [];
  const sockets = new Set<net.Socket>();

  const track = (socket: net.Socket): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    // A reset is one more way for a connection to end; it ends its pair below.
    socket.on('error', () => undefined);
  };

  const forward = (from: net.Socket, to: net.Socket): void => {
    from.on('data', (chunk: Buffer) => {
      if (cut) held.push(() => to.write(chunk));
      else to.write(chunk);
    });
    from.on('close', () => {
      if (cut) held.push(() => to.destroy());
      else to.destroy();
    });
  };

  const relay = (client: net.Socket): void => {
    if (client.destroyed) return;
    const server = net.connect(targetPort, targetHost);
    track(server);
    forward(client, server);
    forward(server, client);
  };

  const listener = net.createServer((client) => {
    track(client);
    if (!cut) {
      relay(client);
      return;
    }
    // Its first bytes (the client's startup message) wait with it.
    const early: Buffer[] = [];
    const keep = (chunk: Buffer) => early.push(chunk);
    client.on('data', keep);
    held.push(() => {
      client.off('data', keep);
      if (client.destroyed) return;
      relay(client);
      for (const chunk of early) client.emit('data', chunk);
    });
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const { port } = listener.address() as net.AddressInfo;

  return {
    port,
    cut() {
      cut = true;
    },
    heal() {
      cut = false;
      const now = held;
      held = [];
      for (const deliver of now) deliver();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    },
  };
}
