import type { IncomingMessage } from 'node:http';

/** The router's limit on one path segment (find-my-way's maxParamLength, Fastify's default). */
export const MAX_SEGMENT = 100;

/** What stands in for an unreadable segment: it routes like any value and is never looked up. */
const PLACEHOLDER = '-';

const problems = new WeakMap<IncomingMessage, Map<number, string>>();

function segmentProblem(segment: string): string | undefined {
  if (segment.length > MAX_SEGMENT) return `Too long: at most ${MAX_SEGMENT} characters.`;
  if (!segment.includes('%')) return undefined;
  try {
    decodeURIComponent(segment);
    return undefined;
  } catch {
    return 'Not valid percent-encoding.';
  }
}

/**
 * Fastify's rewriteUrl: a path segment the router would refuse (too long, a malformed %-escape)
 * is replaced by a placeholder and its problem kept, so the request routes as usual, passes the
 * contract's checks in their order (authentication first) and is then a 422 naming the parameter
 * (pathProblems), instead of Fastify's own 414/400 echoing the input. The logged URL is the
 * rewritten one: the input never reaches a log whole.
 */
export function guardPath(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  // The common case costs one scan: nothing escaped, nothing long.
  if (path.length <= MAX_SEGMENT && !path.includes('%')) return url;
  const segments = path.split('/');
  let found: Map<number, string> | undefined;
  segments.forEach((s, i) => {
    const problem = segmentProblem(s);
    if (!problem) return;
    (found ??= new Map()).set(i, problem);
    segments[i] = PLACEHOLDER;
  });
  if (!found) return url;
  problems.set(req, found);
  return segments.join('/') + (q < 0 ? '' : url.slice(q));
}

/**
 * The problems guardPath found, by the name of the route's parameter at that segment (a route
 * template like /api/v1/applications/:uuid); undefined when the path was readable.
 */
export function pathProblems(req: IncomingMessage, template: string): Record<string, string[]> | undefined {
  const found = problems.get(req);
  if (!found) return undefined;
  const names = template.split('/');
  return Object.fromEntries([...found].map(([i, message]) => [names[i]?.startsWith(':') ? names[i].slice(1) : 'path', [message]]));
}
