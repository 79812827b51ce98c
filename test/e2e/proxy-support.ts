/**
 * Asking a real proxy for a domain as a browser would after DNS: a request to its loopback port
 * with a Host header (or a TLS server name). Shared by the proxy tests.
 */
import http from 'node:http';
import https from 'node:https';
import type { PeerCertificate } from 'node:tls';
import { until } from './support.js';

export { freePort } from '../helpers/process.js';

export interface Answer {
  status: number;
  body: string;
  location?: string;
  issuer?: string;
}

/** One GET to the proxy on 127.0.0.1 as `host` would be asked for (TLS: with it as the server name). */
export function ask(port: number, host: string, tls = false): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const opts = { host: '127.0.0.1', port, path: '/', headers: { host }, timeout: 5_000, ...(tls ? { servername: host, rejectUnauthorized: false, agent: false } : {}) };
    const req = (tls ? https : http).get(opts, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => {
        const cert = tls ? ((res.socket as import('node:tls').TLSSocket).getPeerCertificate?.() as PeerCertificate | undefined) : undefined;
        resolve({ status: res.statusCode ?? 0, body: body.trim(), location: res.headers.location, issuer: String(cert?.issuer?.CN ?? '') });
      });
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

/** Polls until the proxy answers `host` as `want` says (routes are reloaded, not instant). */
export const answers = (port: number, host: string, want: (a: Answer) => boolean, tls = false) =>
  until(
    `${host} to answer as expected`,
    async () => {
      const a = await ask(port, host, tls).catch(() => undefined);
      return a && want(a) ? a : undefined;
    },
    30_000,
    250,
  );
