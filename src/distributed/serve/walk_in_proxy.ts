/**
 * The join page's NATS link: `wss://host:port/<key>/nats` on the walk-in server's own
 * origin, piped to nats-server's local WebSocket listener (plain `ws://`, on this machine).
 * One port, one certificate, and no key file for nats-server: the page may open only
 * `wss://` (it is https) and, by its CSP, only its own origin. Every frame is passed as is,
 * both ways; frames for a side not yet open wait for it; either side
 * closing closes the other. NATS still checks the slot's user and password.
 */

/** The Deno call used here (typed locally: browser type-checks see no Deno types). */
interface DenoUpgrade {
  upgradeWebSocket(req: Request): { socket: WebSocket; response: Response };
}

/**
 * Upgrade `req` (a WebSocket request) and pipe it to `upstream` (`ws://…` of nats-server).
 * @param onClosed Told one line when the pipe ends with an error (upstream unreachable).
 */
export function proxyWebSocket(req: Request, upstream: string, onClosed?: (line: string) => void): Response {
  const deno = (globalThis as unknown as { Deno?: DenoUpgrade }).Deno;
  if (!deno) throw new Error("proxyWebSocket: needs Deno (Deno.upgradeWebSocket)");
  const { socket: page, response } = deno.upgradeWebSocket(req);
  const up = new WebSocket(upstream);
  page.binaryType = "arraybuffer";
  up.binaryType = "arraybuffer";
  // Frames for a side not open yet (nats-server's INFO can come before the page's socket opens).
  const toUp: (string | ArrayBuffer)[] = [], toPage: (string | ArrayBuffer)[] = [];
  const shut = (ws: WebSocket, code: number, why: string) => {
    if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) {
      try {
        ws.close(code >= 3000 && code < 5000 || code === 1000 ? code : 1000, why.slice(0, 120));
      } catch { /* already closing */ }
    }
  };
  page.onmessage = (e) => (up.readyState === WebSocket.OPEN ? up.send(e.data) : toUp.push(e.data));
  up.onopen = () => {
    for (const d of toUp.splice(0)) up.send(d);
  };
  page.onopen = () => {
    for (const d of toPage.splice(0)) page.send(d);
  };
  up.onmessage = (e) => (page.readyState === WebSocket.OPEN ? page.send(e.data) : toPage.push(e.data));
  page.onclose = (e) => shut(up, e.code, e.reason);
  up.onclose = (e) => shut(page, e.code, e.reason);
  up.onerror = () => {
    onClosed?.(`the NATS proxy could not reach ${upstream}`);
    shut(page, 1000, "the coordinator's NATS server is unreachable");
  };
  page.onerror = () => shut(up, 1000, "the page's socket failed");
  return response;
}
