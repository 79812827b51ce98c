import type { FastifyReply } from 'fastify';
import { html, type Html } from './html.js';
import type { Person } from './session.js';
import { ASSET_PATHS } from './assets.js';

export interface PageOptions {
  title: string;
  person?: Person | null;
  /** The CSRF token for the sign-out form (and for pages whose scripts post JSON). */
  csrf?: string;
  /** Which navigation entry is the current page. */
  current?: 'resources' | 'tokens' | 'apps' | 'teams' | 'passkeys' | 'approvals' | 'audit';
  /** Scripts to load (served by the console, never inline). */
  scripts?: readonly string[];
  /** Extra CSP form-action sources (a consent page that redirects to a client). */
  formAction?: readonly string[];
  status?: number;
}

const NAV: ReadonlyArray<{ key: NonNullable<PageOptions['current']>; href: string; label: string }> = [
  { key: 'resources', href: '/resources', label: 'Resources' },
  { key: 'tokens', href: '/tokens', label: 'API tokens' },
  { key: 'apps', href: '/apps', label: 'Connected apps' },
  { key: 'teams', href: '/teams', label: 'Teams' },
  { key: 'approvals', href: '/approvals', label: 'Approvals' },
  { key: 'passkeys', href: '/passkeys', label: 'Passkeys' },
  { key: 'audit', href: '/audit', label: 'Audit log' },
];

/**
 * The strict policy every console page carries: nothing inline, everything from this origin,
 * no framing, forms post only here (plus what a consent page names).
 */
export function contentSecurityPolicy(formAction: readonly string[] = []): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "connect-src 'self'",
    `form-action 'self'${formAction.map((s) => ` ${s}`).join('')}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

/**
 * Headers of every console answer: the CSP, no sniffing, the referrer only to berth itself (a
 * login link's token never leaves; no-referrer would make the browser send `Origin: null` on
 * form posts, which the CSRF check refuses), no caching.
 */
export function securityHeaders(reply: FastifyReply, formAction: readonly string[] = []): FastifyReply {
  return reply.headers({
    'content-security-policy': contentSecurityPolicy(formAction),
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
    'x-frame-options': 'DENY',
    'cache-control': 'no-store',
  });
}

/** A whole page: the document around `body`, with navigation when someone is signed in. */
export function layout(opts: PageOptions, body: Html): Html {
  const p = opts.person;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="${opts.csrf ?? ''}">
<title>${opts.title} · berth</title>
<link rel="stylesheet" href="${ASSET_PATHS.css}">
${(opts.scripts ?? []).map((s) => html`<script src="${s}" defer></script>`)}
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/">berth</a>
  ${
    p
      ? html`<nav aria-label="Console">
    <ul>${NAV.map((n) => html`<li><a href="${n.href}"${n.key === opts.current ? html` aria-current="page"` : ''}>${n.label}</a></li>`)}</ul>
  </nav>
  <form class="signout" method="post" action="/logout">
    <input type="hidden" name="_csrf" value="${opts.csrf ?? ''}">
    <span class="who">${p.email}</span>
    <button type="submit">Sign out</button>
  </form>`
      : ''
  }
</header>
<main id="main" tabindex="-1">
<h1>${opts.title}</h1>
${body}
</main>
</body>
</html>
`;
}

/** Sends a page with the console's headers. */
export function sendPage(reply: FastifyReply, opts: PageOptions, body: Html): FastifyReply {
  return securityHeaders(reply, opts.formAction)
    .code(opts.status ?? 200)
    .type('text/html; charset=utf-8')
    .send(layout(opts, body).value);
}
