import { ProtocolError, ProtocolErrorCode, ResourceNotFoundError, type ReadResourceResult } from '@modelcontextprotocol/server';
import type { Caller } from '../../core/caller.js';
import type { Core } from '../../core/gate.js';
import type { Operation } from '../../core/operation.js';
import { operationTable } from '../../core/operations/table.js';
import { shownStatus } from '../../core/operations/deployments.js';
import { BerthError } from '../../errors.js';
import { parseUri, type ResourceKindSpec } from './kinds.js';

const opsByName = (() => {
  let byName: Map<string, Operation> | undefined;
  return (name: string): Operation => {
    byName ??= new Map(operationTable().map((op) => [op.name, op]));
    const op = byName.get(name);
    if (!op) throw new Error(`resources: no operation named ${name}`);
    return op;
  };
})();

/** A malformed URI: invalid params, saying so (data.uri names it, as the SDK's own check does). */
export const invalidUri = (uri: string): ProtocolError => new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid resource URI: ${uri}`, { uri, reason: 'invalid_uri' });

/** A refusal of the core as the JSON-RPC error a resource request answers. */
function protocolErrorOf(err: unknown, uri: string): unknown {
  if (!(err instanceof BerthError)) return err;
  // Missing and another team's are the same answer, word for word.
  if (err.kind === 'not_found') return new ResourceNotFoundError(uri);
  if (err.kind === 'validation') return invalidUri(uri);
  return new ProtocolError(ProtocolErrorCode.InvalidRequest, err.message, {
    uri,
    reason: err.kind,
    ...(err.details.missingPermissions ? { missing_permissions: err.details.missingPermissions } : {}),
  });
}

type Doc = Record<string, unknown>;

/** An application's, database's or service's status: what an agent follows, not its whole configuration. */
async function statusDocument(core: Core, caller: Caller, spec: ResourceKindSpec, read: Doc): Promise<Doc> {
  const last = await core.deps.db
    .selectFrom('deployments as d')
    .innerJoin('resources as r', 'r.id', 'd.resource_id')
    .select(['d.uuid', 'd.kind', 'd.status', 'd.created_at', 'd.finished_at'])
    .where('r.uuid', '=', String(read.uuid))
    .where('d.team_id', '=', caller.teamId)
    .orderBy('d.id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return {
    kind: spec.kind.slice(0, -1),
    uuid: read.uuid,
    name: read.name,
    status: read.status,
    restart_count: read.restart_count ?? 0,
    last_exit_code: read.last_exit_code ?? null,
    observed_at: read.observed_at ?? null,
    server_uuid: read.server_uuid ?? null,
    destination_uuid: read.destination_uuid ?? null,
    project_uuid: read.project_uuid ?? null,
    last_deployment: last ? { deployment_uuid: last.uuid, kind: last.kind, status: shownStatus(last.status), created_at: last.created_at, finished_at: last.finished_at } : null,
  };
}

/** What a URI names, read under the caller's permissions: its JSON document, or the protocol error. */
export async function readDocument(core: Core, caller: Caller, uri: string): Promise<Doc> {
  const parsed = parseUri(uri);
  if (parsed === 'invalid') throw invalidUri(uri);
  if (parsed === 'unknown') throw new ResourceNotFoundError(uri);
  const { spec, uuid } = parsed;
  try {
    const read = (await core.run(opsByName(spec.read), caller, { uuid })) as Doc;
    return spec.status ? await statusDocument(core, caller, spec, read) : read;
  } catch (err) {
    throw protocolErrorOf(err, uri);
  }
}

export async function readResource(core: Core, caller: Caller, uri: string): Promise<ReadResourceResult> {
  const doc = await readDocument(core, caller, uri);
  return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(doc) }] };
}
