/**
 * The join page's HTML (served at `https://host:port/<key>/join/<ticket>`) and the Content
 * Security Policy it is served with: scripts only from the page's own folder and the checked
 * bundle's Blob URL, network only to the page's own origin (its files and the NATS
 * WebSocket proxy): what the page says the job may do is what the browser lets it do.
 */

/** The page's Content-Security-Policy (`connect-src 'self'` covers the same origin's `wss://`). */
export const JOIN_PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self' blob:",
  "worker-src 'self' blob:",
  "connect-src 'self'",
  "style-src 'unsafe-inline'",
  "img-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

/**
 * The page for one slot: its join token in a non-executed JSON script element, the loader
 * `page.js` from the run's folder.
 * @param token The slot's walk-in token (base64url: nothing to escape).
 * @param key The run's access key (the folder).
 */
export function joinPageHtml(token: string, key: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(token)) {
    throw new RangeError(`joinPageHtml: token must be base64url, got ${token.length} characters with others`);
  }
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>flodl walk-in</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; max-width: 40em; margin: 2em auto; padding: 0 1em; color: #222; }
  dt { font-weight: 600; } dd { margin: 0 0 .5em 0; }
  #error { color: #a00; white-space: pre-wrap; }
  button { font-size: 1em; padding: .4em 1.2em; }
</style>
</head>
<body>
<h1>flodl walk-in</h1>
<p>This tab trains one rank of a run that a coordinator drives, with this machine's GPU.</p>
<dl>
  <dt>Run</dt><dd id="run">…</dd>
  <dt>Rank</dt><dd id="rank">…</dd>
  <dt>Trained</dt><dd id="steps">0 steps, 0 samples</dd>
  <dt>What the job may do on this machine</dt>
  <dd id="may">network to <span id="origin">the coordinator</span> (this page's server), this GPU (WebGPU), nothing else.</dd>
</dl>
<p id="status">Loading…</p>
<p id="error" hidden></p>
<button id="leave" type="button">Leave</button>
<script id="walk-in-token" type="application/json">${token}</script>
<script type="module" src="/${key}/page.js"></script>
</body>
</html>
`;
}
