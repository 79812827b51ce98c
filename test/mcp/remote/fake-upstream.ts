import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';

export interface Seen {
  method: string;
  url: string;
  authorization?: string;
  body: string;
}

interface Listening {
  url: string;
  seen: Seen[];
  /** Closes the listener and every open connection (the upstream goes away). */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

function listen(handler: (req: http.IncomingMessage, body: string, res: http.ServerResponse) => void | Promise<void>): Promise<Listening> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, authorization: req.headers.authorization, body });
      void Promise.resolve(handler(req, body, res)).catch((err) => {
        res.writeHead(500).end(String(err));
      });
    });
  });
  let port = 0;
  const start = () =>
    new Promise<void>((resolve) =>
      server.listen(port, '127.0.0.1', () => {
        port = (server.address() as AddressInfo).port;
        resolve();
      }),
    );
  const stop = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return start().then(() => ({ url: `http://127.0.0.1:${port}`, seen, down: stop, up: start, close: stop }));
}

/** A forwarding proxy in front of a real berth: counts what reaches the upstream, and can go down. */
export function countingProxy(target: string): Promise<Listening> {
  return listen(async (req, body, res) => {
    const r = await request(target + req.url, {
      method: req.method as never,
      headers: Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k))) as Record<string, string>,
      body: body === '' ? undefined : body,
    });
    const text = await r.body.text();
    const headers = Object.fromEntries(Object.entries(r.headers).filter(([k]) => !['connection', 'keep-alive', 'transfer-encoding', 'content-length'].includes(k)));
    res.writeHead(r.statusCode, headers as http.OutgoingHttpHeaders).end(text);
  });
}

export type Route = (req: { method: string; url: URL; body: string }) => { status?: number; headers?: Record<string, string>; body?: unknown; text?: string };

/** A scripted upstream (a Coolify-like API): routes by `METHOD /path`; anything else is 404 "Not found.". */
export function scriptedUpstream(routes: Record<string, Route>): Promise<Listening> {
  return listen((req, body, res) => {
    const url = new URL(req.url!, 'http://x');
    const route = routes[`${req.method} ${url.pathname}`];
    if (!route) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ message: 'Not found.', docs: 'https://coolify.io/docs' }));
      return;
    }
    const r = route({ method: req.method!, url, body });
    if (r.text !== undefined) {
      res.writeHead(r.status ?? 200, { 'content-type': 'text/plain; charset=utf-8', ...r.headers }).end(r.text);
      return;
    }
    res.writeHead(r.status ?? 200, { 'content-type': 'application/json', ...r.headers }).end(JSON.stringify(r.body ?? {}));
  });
}
