/**
 * The walk-in server's certificate (https for tabs: WebGPU needs a secure context on any
 * address but localhost, and an https page may only open `wss://`). Either the operator's
 * own (`--tls-cert/--tls-key`, PEM files, read by {@link readTlsFiles}), or a self-signed
 * one made here for the advertised address ({@link selfSignedCertificate}); either way the
 * coordinator prints its SHA-256 fingerprint and SPKI hash ({@link certificateDigests}) so
 * a joiner can check what the browser shows (or trust it with Chromium's
 * `--ignore-certificate-errors-spki-list=<SPKI hash>`).
 *
 * The self-signed one comes from `openssl` as a subprocess (installed with Debian's base
 * system; WebCrypto cannot sign an X.509 certificate without a DER writer of our own): an
 * EC P-256 key and certificate written to openssl's stdout, so the private key is never in a
 * file. Coordinator side only (Deno, `--allow-run=openssl`).
 */

/** A certificate and its private key, PEM. */
export interface TlsPair {
  /** The certificate chain, PEM (`-----BEGIN CERTIFICATE-----`). */
  cert: string;
  /** The private key, PEM (`-----BEGIN … PRIVATE KEY-----`). */
  key: string;
}

/** What a joiner checks a certificate by. */
export interface CertificateDigests {
  /** SHA-256 of the certificate (DER), as browsers show it: 32 hex pairs joined by `:`. */
  fingerprint: string;
  /** Base64 SHA-256 of its SubjectPublicKeyInfo (Chromium's `--ignore-certificate-errors-spki-list`). */
  spki: string;
}

/** The Deno calls used here (typed locally: browser type-checks see no Deno types). */
interface DenoTls {
  readTextFile(path: string): Promise<string>;
  Command: new (cmd: string, opts: { args: string[]; stdin: "piped"; stdout: "piped"; stderr: "piped" }) => {
    spawn(): {
      stdin: WritableStream<Uint8Array>;
      output(): Promise<{ success: boolean; code: number; stdout: Uint8Array; stderr: Uint8Array }>;
    };
  };
}

function deno(what: string): DenoTls {
  const d = (globalThis as unknown as { Deno?: DenoTls }).Deno;
  if (!d) throw new Error(`${what}: needs Deno (the coordinator's side)`);
  return d;
}

const CERT_RE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/;
const KEY_RE =
  /-----BEGIN (?:RSA |EC |ENCRYPTED )?PRIVATE KEY-----[\s\S]+?-----END (?:RSA |EC |ENCRYPTED )?PRIVATE KEY-----/;

/**
 * The operator's certificate and key files (PEM).
 * @param flags How errors name the two files (default `--tls-cert`, `--tls-key`).
 * @throws {TypeError} One line naming the flag: a file that cannot be read, or is not PEM of a certificate / a private key.
 */
export async function readTlsFiles(
  certPath: string,
  keyPath: string,
  flags = ["--tls-cert", "--tls-key"],
): Promise<TlsPair> {
  const d = deno("readTlsFiles");
  const read = async (flag: string, path: string, re: RegExp, what: string) => {
    let text: string;
    try {
      text = await d.readTextFile(path);
    } catch (e) {
      throw new TypeError(`${flag} ${JSON.stringify(path)}: cannot read it (${(e as Error).message.split("\n")[0]})`);
    }
    if (!re.test(text)) {
      throw new TypeError(
        `${flag} ${JSON.stringify(path)}: not a PEM ${what} (expected a "-----BEGIN ${what.toUpperCase()}-----" block)`,
      );
    }
    return text;
  };
  return {
    cert: await read(flags[0], certPath, CERT_RE, "certificate"),
    key: await read(flags[1], keyPath, KEY_RE, "private key"),
  };
}

/** Runs openssl with `input` on stdin; its stdout, or an error naming the step and openssl's words. */
async function openssl(args: string[], input: string, step: string): Promise<string> {
  let child;
  try {
    child = new (deno("openssl").Command)("openssl", { args, stdin: "piped", stdout: "piped", stderr: "piped" })
      .spawn();
  } catch (e) {
    throw new Error(
      `walk-in certificate: cannot run openssl (${step}): ${
        (e as Error).message
      }; install it, or give --tls-cert/--tls-key`,
    );
  }
  const w = child.stdin.getWriter();
  await w.write(new TextEncoder().encode(input));
  await w.close();
  const out = await child.output();
  if (!out.success) {
    const why = new TextDecoder().decode(out.stderr).trim().split("\n")[0];
    throw new Error(`walk-in certificate: openssl ${step} failed (exit ${out.code}): ${why}`);
  }
  return new TextDecoder().decode(out.stdout);
}

/**
 * A self-signed certificate (EC P-256, 30 days) for `host`: its subjectAltName is `IP:host`
 * for an address, `DNS:host` for a name.
 * @throws {RangeError} For a host that is neither an IP address nor a DNS name.
 * @throws {Error} When openssl cannot run or fails (its first line).
 */
export async function selfSignedCertificate(host: string, days = 30): Promise<TlsPair> {
  const bare = host.replace(/^\[|\]$/g, "");
  const ip = /^\d{1,3}(\.\d{1,3}){3}$/.test(bare) || bare.includes(":");
  if (!ip && !/^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*$/.test(bare)) {
    throw new RangeError(
      `selfSignedCertificate: host must be an IP address or a DNS name, got ${JSON.stringify(host)}`,
    );
  }
  const san = `${ip ? "IP" : "DNS"}:${bare}`;
  const pem = await openssl(
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      String(days),
      "-subj",
      `/CN=flodl walk-in ${bare}`,
      "-addext",
      `subjectAltName=${san}`,
      // A leaf, not a CA (TLS clients such as rustls refuse a CA certificate as the server's).
      "-addext",
      "basicConstraints=critical,CA:FALSE",
      "-addext",
      "keyUsage=critical,digitalSignature",
      "-addext",
      "extendedKeyUsage=serverAuth",
      "-keyout",
      "/dev/stdout",
      "-out",
      "/dev/stdout",
    ],
    "",
    "req -x509",
  );
  const cert = CERT_RE.exec(pem)?.[0], key = KEY_RE.exec(pem)?.[0];
  if (!cert || !key) throw new Error("walk-in certificate: openssl req wrote no certificate and key");
  return { cert: cert + "\n", key: key + "\n" };
}

function der(pem: string, label: string): Uint8Array<ArrayBuffer> {
  const m = new RegExp(`-----BEGIN ${label}-----([\\s\\S]+?)-----END ${label}-----`).exec(pem);
  if (!m) throw new TypeError(`certificateDigests: no PEM ${label} block`);
  return Uint8Array.from(atob(m[1].replace(/\s+/g, "")), (c) => c.charCodeAt(0));
}

/**
 * The fingerprint and SPKI hash of a certificate (the first of a PEM chain).
 * @throws {TypeError} When `certPem` holds no certificate.
 * @throws {Error} When openssl cannot read it.
 */
export async function certificateDigests(certPem: string): Promise<CertificateDigests> {
  const first = CERT_RE.exec(certPem)?.[0];
  if (!first) throw new TypeError("certificateDigests: no PEM certificate block");
  const sha = async (b: Uint8Array<ArrayBuffer>) => new Uint8Array(await crypto.subtle.digest("SHA-256", b));
  const fp = await sha(der(first, "CERTIFICATE"));
  const pub = await openssl(["x509", "-pubkey", "-noout"], first, "x509 -pubkey");
  const spki = await sha(der(pub, "PUBLIC KEY"));
  return {
    fingerprint: Array.from(fp, (b) => b.toString(16).padStart(2, "0").toUpperCase()).join(":"),
    spki: btoa(String.fromCharCode(...spki)),
  };
}
