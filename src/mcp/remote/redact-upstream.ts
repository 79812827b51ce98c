/**
 * Upstream error bodies are passed to the agent as data: cut to a few KB and with anything that
 * looks like a credential removed first, so an upstream that echoes a header, a token or a
 * connection URL never hands it to the model.
 */

export const ERROR_BODY_LIMIT = 4_096;
const MARK = '[redacted]';

/** Keys whose string values are credentials wherever they appear in a JSON body. */
const SECRET_KEY = /^(authorization|proxy-authorization|cookie|set-cookie|password|passwd|secret|token|api[_-]?key|private[_-]?key|[a-z0-9_]*_(password|secret|token))$/i;

/** Secrets in free text: bearer/basic credentials, `<digits>|<secret>` tokens, passwords in URLs. */
export function redactText(text: string, known: readonly string[] = []): string {
  let out = text;
  for (const k of known) if (k.length >= 4) out = out.split(k).join(MARK);
  return out
    .replace(/(authorization["']?\s*[:=]\s*["']?)[^"'\r\n,;]+/gi, `$1${MARK}`)
    .replace(/\b(bearer|basic)(\s+)(?!\[redacted\])[A-Za-z0-9._~+/=|-]+/gi, `$1$2${MARK}`)
    .replace(/\b\d+\|[A-Za-z0-9]{8,}/g, MARK)
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/[^\s/:@"']*:)[^\s@/"']+@/gi, `$1${MARK}@`);
}

function redactValue(value: unknown, known: readonly string[], key?: string): unknown {
  if (typeof value === 'string') return key !== undefined && SECRET_KEY.test(key) ? MARK : redactText(value, known);
  if (Array.isArray(value)) return value.map((v) => redactValue(v, known));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactValue(v, known, k)]));
  }
  return value;
}

const cut = (s: string, n: number) => (s.length <= n ? s : `${s.slice(0, n)}… (truncated)`);

/**
 * An upstream error answer as a tool error body. A JSON object that fits is passed through as
 * it is (so a berth upstream's errors read exactly like local mode's); anything else becomes
 * `{ message, upstream_status, upstream_body }` with the text cut to ERROR_BODY_LIMIT.
 */
export function upstreamErrorBody(status: number, text: string, known: readonly string[] = []): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = text.trim() ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
    const clean = redactValue(parsed, known) as Record<string, unknown>;
    const json = JSON.stringify(clean);
    if (json.length <= ERROR_BODY_LIMIT) return clean;
    const message = typeof clean.message === 'string' ? cut(clean.message, 500) : `The upstream answered ${status}.`;
    return { message, upstream_status: status, upstream_body: cut(json, ERROR_BODY_LIMIT) };
  }
  const body = cut(redactText(text, known).trim(), ERROR_BODY_LIMIT);
  return { message: `The upstream answered ${status}.`, upstream_status: status, ...(body ? { upstream_body: body } : {}) };
}
