/**
 * Real git servers on loopback for the clone tests: a bare repository, served by `git daemon`
 * (git://) and by `git http-backend` behind a small Node HTTP server (smart HTTP, which shallow
 * clones need), and plain listeners that record every request (what git must never reach).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './process.js';

export interface GitRepos {
  root: string;
  /** The commit on main of `app.git`. */
  commit: string;
  cleanup(): void;
}

/** `app.git` with one commit on main holding a Dockerfile. */
export function makeRepos(): GitRepos {
  const root = mkdtempSync(path.join(os.tmpdir(), 'berth-git-'));
  const bare = path.join(root, 'repos', 'app.git');
  execFileSync('git', ['init', '-q', '--bare', '-b', 'main', bare]);
  writeFileSync(path.join(bare, 'git-daemon-export-ok'), '');
  const work = path.join(root, 'work');
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.test', ...args], { cwd: work, encoding: 'utf8' });
  execFileSync('git', ['init', '-q', '-b', 'main', work]);
  writeFileSync(path.join(work, 'Dockerfile'), 'FROM scratch\n');
  git('add', '-A');
  git('commit', '-q', '-m', 'first');
  git('push', '-q', bare, 'main');
  return { root: path.join(root, 'repos'), commit: git('rev-parse', 'HEAD').trim(), cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

async function listening(port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise<boolean>((resolve) =>
      net
        .connect(port, '127.0.0.1')
        .once('connect', function (this: net.Socket) {
          this.destroy();
          resolve(true);
        })
        .once('error', () => resolve(false)),
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nothing listens on ${port}`);
}

/** `git daemon` on 127.0.0.1 serving the repositories below `root` (each with git-daemon-export-ok). */
export async function gitDaemon(repos: Pick<GitRepos, 'root'>): Promise<{ port: number; stop(): void }> {
  const port = await freePort();
  const daemon: ChildProcess = spawn('git', ['daemon', '--reuseaddr', '--listen=127.0.0.1', `--port=${port}`, `--base-path=${repos.root}`, repos.root], { stdio: 'ignore' });
  await listening(port);
  return { port, stop: () => daemon.kill() };
}

export interface Recorder {
  port: number;
  /** Every request line (method and path) received. */
  requests: string[];
  close(): void;
}

/** An HTTP server on 127.0.0.1 that records each request and answers with `answer`. */
export async function httpRecorder(answer: (req: http.IncomingMessage, res: http.ServerResponse) => void = (q, r) => (q.resume(), r.end('ok'))): Promise<Recorder> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    answer(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { port: (server.address() as net.AddressInfo).port, requests, close: () => server.close() };
}

/** Smart HTTP: `git http-backend` as a CGI behind a Node HTTP server on 127.0.0.1. */
export function gitHttp(repos: GitRepos): Promise<Recorder> {
  return httpRecorder((req, res) => httpBackend(repos.root, req, res, new URL(req.url!, 'http://x').pathname));
}

/** Answers one smart-HTTP request with `git http-backend` (CGI) over the repositories under `root`. */
export function httpBackend(root: string, req: http.IncomingMessage, res: http.ServerResponse, pathInfo: string): void {
  const url = new URL(req.url!, 'http://x');
  const cgi = spawn('git', ['http-backend'], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: '1',
      PATH_INFO: pathInfo,
      QUERY_STRING: url.search.slice(1),
      REQUEST_METHOD: req.method!,
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '',
      GIT_PROTOCOL: String(req.headers['git-protocol'] ?? ''),
      REMOTE_ADDR: '127.0.0.1',
    },
  });
  req.pipe(cgi.stdin);
  let head = Buffer.alloc(0);
  let started = false;
  cgi.stdout.on('data', (chunk: Buffer) => {
    if (started) return void res.write(chunk);
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end < 0) return;
    for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
      const i = line.indexOf(':');
      const [k, v] = [line.slice(0, i).trim(), line.slice(i + 1).trim()];
      if (k.toLowerCase() === 'status') res.statusCode = Number(v.split(' ')[0]);
      else res.setHeader(k, v);
    }
    started = true;
    res.write(head.subarray(end + 4));
  });
  cgi.stdout.on('end', () => res.end());
  cgi.stderr.resume();
}
