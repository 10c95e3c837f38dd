/**
 * A static file server that honours HTTP `Range` requests (206 + the slice), run as a Web
 * Worker so its event loop is not the trainer's: bench/dataplane.ts reads a pack over it as
 * a browser tab would read the coordinator's. Message in: the file's path; out: the port.
 */
const scope = globalThis as unknown as { onmessage: (e: MessageEvent<string>) => void; postMessage(m: unknown): void };

scope.onmessage = async (e) => {
  const bytes = await Deno.readFile(e.data);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    if (req.method === "HEAD") return new Response(null, { headers: { "content-length": String(bytes.length) } });
    const m = /bytes=(\d+)-(\d+)/.exec(req.headers.get("range") ?? "");
    if (!m) return new Response(bytes);
    return new Response(bytes.subarray(Number(m[1]), Number(m[2]) + 1), { status: 206 });
  });
  scope.postMessage(server.addr.port);
};
