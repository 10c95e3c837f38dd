/**
 * Walk-in ranks (issue 26): the coordinator serves what a rank needs over HTTP (a loader,
 * the bundled rank runtime and program, the data as packs) and prints one command per slot,
 * `deno run --allow-net=<host:ports> <URL> <token>`: no checkout, no install, no data and no
 * permission but the network on the joining machine. The bundle is built by
 * `buildWalkIn` (src/walk_in_build.ts, in `flodl-webgpu/vite`: Vite, as the npm package is). With a certificate
 * (walk_in_tls.ts: the operator's, or self-signed), also one https link per slot for a
 * machine with only a browser: the join page (walk_in_page.ts) runs the same bundle, its
 * NATS link is a `wss://` proxy on the same origin (walk_in_proxy.ts), and each slot's
 * token serves once.
 */
export { type WalkInDigests, type WalkInFiles, type WalkInServeOptions, type WalkInServer, serveWalkIn } from "./walk_in_server.ts";
export { packBytes, packDataset, walkInData } from "./walk_in_data.ts";
export { startWalkIn } from "./walk_in_start.ts";
export { type CertificateDigests, certificateDigests, readTlsFiles, selfSignedCertificate, type TlsPair } from "./walk_in_tls.ts";
