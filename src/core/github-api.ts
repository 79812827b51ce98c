import { createPrivateKey, createSign } from 'node:crypto';
import { BerthError, notFound } from '../errors.js';
import type { Db } from '../store/db.js';
import type { GithubAppsTable } from '../store/schema.js';
import type { TargetGuard } from './outbound-guard.js';

/**
 * GitHub's API as Coolify calls it for a GitHub app (bootstrap/helpers/github.php): a JWT signed
 * RS256 with the app's private key (iss = app_id, ten minutes) buys an installation token
 * (POST /app/installations/{id}/access_tokens), which reads the installation's repositories and
 * branches and clones over HTTPS as x-access-token. The app's api_url and html_url are its
 * settings, so GitHub Enterprise works alike; every call goes through the outbound guard. The
 * token is never logged, stored or answered: errors name the app and GitHub's words only.
 */

type AppRow = Pick<GithubAppsTable, 'name' | 'api_url' | 'html_url' | 'app_id' | 'installation_id' | 'private_key_id' | 'team_id'>;

const TIMEOUT_MS = 20_000;
const ANSWER_BYTES = 8 * 1024 * 1024;
/** Coolify's safety limit on the repositories' pages (100 × 100 = 10,000 repositories). */
const MAX_PAGES = 100;

export interface GithubSession {
  app: AppRow;
  guard: TargetGuard;
  token: string;
}

const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');

/** The app's JWT: RS256 over {iat, exp, iss}; iat a minute back for clock drift, as Coolify. */
export function githubAppJwt(appId: number, privateKeyPem: string, now = Date.now()): string {
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(privateKeyPem);
  } catch {
    throw new BerthError('provider_failed', { message: "The GitHub app's private key cannot sign: give the app the PEM key GitHub generated for it (BEGIN RSA PRIVATE KEY)." });
  }
  if (key.asymmetricKeyType !== 'rsa') throw new BerthError('provider_failed', { message: "The GitHub app's private key is not an RSA key: GitHub signs app tokens with RS256 only." });
  const t = Math.floor(now / 1000);
  const head = `${b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT' }))}.${b64url(JSON.stringify({ iat: t - 60, exp: t + 540, iss: String(appId) }))}`;
  return `${head}.${b64url(createSign('RSA-SHA256').update(head).sign(key))}`;
}

async function call(guard: TargetGuard, app: AppRow, method: 'GET' | 'POST', path: string, auth: string): Promise<{ status: number; json: unknown }> {
  const url = `${app.api_url.replace(/\/+$/, '')}${path}`;
  let r: { status: number; text: string };
  try {
    r = await guard.fetch(url, {
      method,
      headers: { authorization: auth, accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28', 'user-agent': 'berth' },
      timeoutMs: TIMEOUT_MS,
      maxAnswer: ANSWER_BYTES,
    });
  } catch (err) {
    throw new BerthError('provider_failed', { message: `GitHub's API for app ${app.name} (${new URL(url).origin}) could not be reached: ${(err as Error).message}` });
  }
  let json: unknown = null;
  try {
    json = JSON.parse(r.text);
  } catch {
    if (r.status < 300) throw new BerthError('provider_failed', { message: `GitHub's API for app ${app.name} answered ${r.status} with something that is not JSON.` });
  }
  return { status: r.status, json };
}

const said = (json: unknown) => {
  const m = (json as { message?: unknown } | null)?.message;
  return typeof m === 'string' ? `: ${m.slice(0, 300)}` : '.';
};

/** GitHub's refusal in berth's 502, naming the app and what was asked (never a token). */
export const githubFailed = (app: AppRow, what: string, status: number, json: unknown) =>
  new BerthError('provider_failed', { message: `GitHub answered ${status} to ${what} for app ${app.name}${said(json)}` });

/** An installation token for the app (Coolify's generateGithubInstallationToken), signed with the team's key. */
export async function githubSession(db: Db, guard: TargetGuard, app: AppRow): Promise<GithubSession> {
  const key = await db.selectFrom('private_keys').select('private_key').where('id', '=', app.private_key_id).where('team_id', '=', app.team_id).executeTakeFirst();
  if (!key) throw notFound();
  const r = await call(guard, app, 'POST', `/app/installations/${app.installation_id}/access_tokens`, `Bearer ${githubAppJwt(app.app_id, key.private_key)}`);
  const token = (r.json as { token?: unknown } | null)?.token;
  if (r.status !== 201 && r.status !== 200) throw githubFailed(app, 'an installation token', r.status, r.json);
  if (typeof token !== 'string' || !/^[\x21-\x7e]{1,1024}$/.test(token))
    throw new BerthError('provider_failed', { message: `GitHub answered an installation token for app ${app.name} that is not one.` });
  return { app, guard, token };
}

/** GET with the installation token. */
export const githubGet = (s: GithubSession, path: string) => call(s.guard, s.app, 'GET', path, `token ${s.token}`);

/** Every repository the installation reaches (all pages), sorted by name as Coolify answers them. */
export async function installationRepositories(s: GithubSession): Promise<Record<string, unknown>[]> {
  const all: Record<string, unknown>[] = [];
  for (let page = 1; page <= MAX_PAGES; page++) {
    const r = await githubGet(s, `/installation/repositories?per_page=100&page=${page}`);
    if (r.status !== 200) throw githubFailed(s.app, 'the installation’s repositories', r.status, r.json);
    const repos = (r.json as { repositories?: unknown } | null)?.repositories;
    if (!Array.isArray(repos) || !repos.length) break;
    all.push(...(repos as Record<string, unknown>[]));
    if (repos.length < 100) break;
  }
  return all.sort((a, b) => String(a.name).localeCompare(String(b.name)));
}

/** A repository's branches (GitHub's objects as it answers them). */
export async function repositoryBranches(s: GithubSession, repo: string): Promise<Record<string, unknown>[]> {
  const r = await githubGet(s, `/repos/${repo}/branches?per_page=100`);
  if (r.status === 404) throw new BerthError('not_found', { message: `Repository ${repo} not found or not accessible by the GitHub app.` });
  if (r.status !== 200 || !Array.isArray(r.json)) throw githubFailed(s.app, `the branches of ${repo}`, r.status, r.json);
  return r.json as Record<string, unknown>[];
}

/** Whether the installation reaches the repository (Coolify asks GET /repos/{owner}/{repo} before it creates). */
export async function requireRepository(s: GithubSession, repo: string): Promise<void> {
  const r = await githubGet(s, `/repos/${repo}`);
  if (r.status === 404 || r.status === 403) throw new BerthError('not_found', { message: 'Repository not found or not accessible by the GitHub App.' });
  if (r.status !== 200) throw githubFailed(s.app, `repository ${repo}`, r.status, r.json);
}

/** "owner/repo" from what Coolify takes (a URL, github.com/owner/repo, owner/repo[.git]); null when it is none. */
export function githubRepository(v: string): string | null {
  const s = v
    .trim()
    .replace(/^https?:\/\//, '')
    .replace(/^github\.com\//, '')
    .replace(/^\/+|\/+$/g, '')
    .replace(/\.git$/, '');
  return /^[A-Za-z0-9_.-]{1,100}\/[A-Za-z0-9_.-]{1,100}$/.test(s) && !s.split('/').some((p) => p === '.' || p === '..') ? s : null;
}
