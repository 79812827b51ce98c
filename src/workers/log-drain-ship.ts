import type { DrainRecord, DrainTarget } from '../core/model/log-drains.js';
import type { TargetGuard } from '../core/outbound-guard.js';

export interface ShipDeps {
  guard: TargetGuard;
  /** Axiom's API base (BERTH_AXIOM_API_URL): its ingest endpoint is `{base}/v1/datasets/{dataset}/ingest`. */
  axiomApiUrl: string;
  timeoutMs: number;
}

/**
 * Sends one batch of lines to one provider's HTTP ingest API, through the one guarded client
 * (the address checked and pinned, no redirects). Throws with the provider and its answer's
 * status, never the key or the URL (a New Relic base URI is the tenant's).
 */
export async function ship(deps: ShipDeps, target: DrainTarget, records: readonly DrainRecord[]): Promise<void> {
  const { url, headers, body } = target.provider === 'axiom' ? axiomRequest(deps.axiomApiUrl, target, records) : newRelicRequest(target, records);
  const r = await deps.guard.fetch(url, {
    method: 'POST',
    timeoutMs: deps.timeoutMs,
    headers: { 'content-type': 'application/json', 'user-agent': 'berth-log-drain', ...headers },
    body,
    maxAnswer: 4096,
  });
  if (r.status < 200 || r.status >= 300) throw new Error(`${target.provider} answered ${r.status}${r.text ? `: ${r.text.slice(0, 200)}` : ''}`);
}

/** Axiom's ingest API: a JSON array of events, `_time` their time, a Bearer API token. */
function axiomRequest(base: string, t: Extract<DrainTarget, { provider: 'axiom' }>, records: readonly DrainRecord[]) {
  return {
    url: `${base.replace(/\/+$/, '')}/v1/datasets/${encodeURIComponent(t.dataset)}/ingest`,
    headers: { authorization: `Bearer ${t.apiKey}` },
    body: JSON.stringify(
      records.map((r) => ({
        _time: r.timestamp,
        message: r.line,
        stream: r.stream,
        container: r.container,
        resource_uuid: r.resource_uuid,
        resource_name: r.resource_name,
        server_name: r.server_name,
      })),
    ),
  };
}

/** New Relic's Log API (detailed form): one block with common attributes and its logs, the license key in X-License-Key. */
function newRelicRequest(t: Extract<DrainTarget, { provider: 'newrelic' }>, records: readonly DrainRecord[]) {
  return {
    url: t.baseUri,
    headers: { 'x-license-key': t.licenseKey },
    body: JSON.stringify([
      {
        common: { attributes: { server_name: records[0]?.server_name ?? '', logtype: 'berth' } },
        logs: records.map((r) => ({
          timestamp: Date.parse(r.timestamp),
          message: r.line,
          attributes: { stream: r.stream, container: r.container, resource_uuid: r.resource_uuid, resource_name: r.resource_name },
        })),
      },
    ]),
  };
}
