/**
 * A stand-in for GitHub (or GitHub Enterprise) that speaks the real protocol of a GitHub app, on
 * 127.0.0.1: the app's JWT is checked against the app's public key (RS256, iss = app id, at most
 * ten minutes), an installation token is issued for the one installation, the REST endpoints
 * berth calls answer with it (installation repositories, a repository, its branches), and the
 * repositories are served over smart HTTP (`git http-backend`) only to basic auth
 * x-access-token:<token>. The API lives under /api/v3 (GitHub Enterprise's layout), git at the root.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes, verify, type KeyObject } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import { httpBackend } from './git.js';

export interface FakeGithub {
  apiUrl: string;
  htmlUrl: string;
  /** Every request: method, path, and whether it carried valid credentials. */
  requests: { method: string; path: string; authorized: boolean }[];
  /** Tokens issued so far (the test checks none of them leaks). */
  tokens: string[];
  /** JWTs refused, with why. */
  refused: string[];
  close(): Promise<void>;
}

export interface FakeGithubOptions {
  appId: number;
  installationId: number;
  publicKey: KeyObject;
  /** Bare repositories under root, as owner/name.git. */
  root: string;
  /** The repositories the installation reaches ("owner/name"). */
  repositories: string[];
}

const json = (res: http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

function checkJwt(jwt: string, o: FakeGithubOptions): string | null {
  const parts = jwt.split('.');
  if (parts.length !== 3) return 'not a JWT';
  const [h, p, sig] = parts as [string, string, string];
  const head = JSON.parse(Buffer.from(h, 'base64url').toString()) as { alg?: string };
  if (head.alg !== 'RS256') return `alg ${head.alg}`;
  if (!verify('RSA-SHA256', Buffer.from(`${h}.${p}`), o.publicKey, Buffer.from(sig, 'base64url'))) return 'bad signature';
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as { iss?: unknown; iat?: number; exp?: number };
  const now = Math.floor(Date.now() / 1000);
  if (String(claims.iss) !== String(o.appId)) return `iss ${String(claims.iss)}`;
  if (typeof claims.exp !== 'number' || typeof claims.iat !== 'number' || claims.exp <= now || claims.iat > now + 60 || claims.exp - now > 600) return 'bad times';
  return null;
}

export async function fakeGithub(o: FakeGithubOptions): Promise<FakeGithub> {
  const requests: FakeGithub['requests'] = [];
  const tokens: string[] = [];
  const refused: string[] = [];
  const valid = (t: string | undefined) => t !== undefined && tokens.includes(t);
  const repo = (full: string, id: number) => {
    const [owner, name] = full.split('/') as [string, string];
    return { id, name, full_name: full, private: true, owner: { login: owner }, default_branch: 'main', html_url: `${htmlUrl}/${full}` };
  };
  let htmlUrl = '';
  const server = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    const auth = req.headers.authorization ?? '';
    if (url.pathname.startsWith('/api/v3/')) {
      const path = url.pathname.slice('/api/v3'.length);
      const bearer = /^(?:Bearer|token) (.+)$/.exec(auth)?.[1];
      const install = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(path);
      if (install && req.method === 'POST') {
        req.resume();
        const why = bearer ? checkJwt(bearer, o) : 'no JWT';
        requests.push({ method: req.method, path, authorized: why === null });
        if (why) return void (refused.push(why), json(res, 401, { message: 'A JSON web token could not be decoded' }));
        if (Number(install[1]) !== o.installationId) return void json(res, 404, { message: 'Not Found' });
        const token = `ghs_${randomBytes(18).toString('hex')}`;
        tokens.push(token);
        return void json(res, 201, { token, expires_at: new Date(Date.now() + 3_600_000).toISOString() });
      }
      requests.push({ method: req.method!, path, authorized: valid(bearer) });
      req.resume();
      if (!valid(bearer)) return void json(res, 401, { message: 'Bad credentials' });
      if (path === '/installation/repositories') {
        const per = Number(url.searchParams.get('per_page') ?? 30);
        const page = Number(url.searchParams.get('page') ?? 1);
        const all = o.repositories.map(repo);
        return void json(res, 200, { total_count: all.length, repositories: all.slice((page - 1) * per, page * per) });
      }
      const m = /^\/repos\/([^/]+\/[^/]+)(\/branches)?$/.exec(path);
      const i = m ? o.repositories.indexOf(m[1]!) : -1;
      if (!m || i < 0) return void json(res, 404, { message: 'Not Found' });
      if (!m[2]) return void json(res, 200, repo(m[1]!, i + 1));
      const refs = execFileSync('git', ['-C', `${o.root}/${m[1]}.git`, 'for-each-ref', '--format=%(refname:short) %(objectname)', 'refs/heads'], { encoding: 'utf8' });
      return void json(
        res,
        200,
        refs
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => {
            const [name, sha] = l.split(' ');
            return { name, commit: { sha, url: `${htmlUrl}/api/v3/repos/${m[1]}/commits/${sha}` }, protected: false };
          }),
      );
    }
    // git over smart HTTP: only the installation's repositories, only with a token as x-access-token.
    const basic = /^Basic (.+)$/.exec(auth)?.[1];
    const [user, pass] = basic ? Buffer.from(basic, 'base64').toString().split(':') : [];
    const ok = user === 'x-access-token' && valid(pass);
    requests.push({ method: req.method!, path: url.pathname, authorized: ok });
    const full = /^\/([^/]+\/[^/]+)\.git\//.exec(url.pathname)?.[1];
    if (!ok) {
      req.resume();
      res.writeHead(401, { 'www-authenticate': 'Basic realm="GitHub"' });
      return void res.end();
    }
    if (!full || !o.repositories.includes(full)) {
      req.resume();
      res.writeHead(404);
      return void res.end();
    }
    httpBackend(o.root, req, res, url.pathname);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  htmlUrl = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return {
    apiUrl: `${htmlUrl}/api/v3`,
    htmlUrl,
    requests,
    tokens,
    refused,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
