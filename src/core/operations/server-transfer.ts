import { z } from 'zod';
import { seesSensitive } from '../../auth/permissions.js';
import { atomically } from '../../store/atomic.js';
import { nowIso } from '../../store/db.js';
import { BerthError, validationError } from '../../errors.js';
import type { Caller } from '../caller.js';
import { owned } from '../lookup.js';
import { defineOperation, type OperationContext } from '../operation.js';
import { classifyHost } from '../network-guard.js';
import { TargetGuard } from '../outbound-guard.js';
import { flag, uuidParam } from '../validators.js';
import { BUNDLE_FORMAT, BUNDLE_VERSION, openBundle, sealBundle } from '../transfer/bundle-crypto.js';
import { bundleSchema } from '../transfer/bundle.js';
import { checkBundle } from '../transfer/checks.js';
import { exportServer } from '../transfer/export.js';
import { importBundle, type ImportSummary, type TransferState } from '../transfer/import.js';
import { transferOf } from '../transfer/state.js';
import { CREATE, READ, UPDATE } from './common.js';
import { SERVER_TRANSFER_FIELDS } from './coolify-fields.js';
import { settleAddress } from './servers.js';

/** A passphrase long enough that scrypt's cost, not guessing, is what an attacker meets. */
const passphrase = z.string().min(12, 'At least 12 characters.').max(1024);

const summarySchema = z.object({
  server_uuid: z.string(),
  export_id: z.string(),
  dry_run: z.boolean(),
  preserve_uuids: z.boolean(),
  claimed: z.boolean(),
  created: z.record(z.string(), z.number()),
  reused: z.record(z.string(), z.number()),
  warnings: z.array(z.string()),
});

/** Thrown inside the import's transaction to roll a dry run back once everything was checked. */
class DryRun extends Error {
  constructor(readonly summary: ImportSummary) {
    super('dry run');
  }
}

/** This instance's address, as its bundles and claims name it. */
const instanceUrl = (ctx: Pick<OperationContext, 'config'>) => ctx.config.publicUrl ?? ctx.config.servedUrl ?? null;

async function exportFor(ctx: OperationContext, uuid: string, withSecrets: boolean) {
  return atomically(ctx.db, async (trx) => exportServer(trx, await owned(trx, 'servers', uuid, ctx.caller.teamId), { withSecrets, instanceUrl: instanceUrl(ctx) }));
}

/** A bundle as sent: sealed ones opened with the passphrase, then read against the bundle's schema (422 naming the path). */
async function readBundle(raw: Record<string, unknown>, pass: string | undefined) {
  let b: unknown = raw;
  if (raw.encrypted === true) {
    if (!pass) throw validationError({ passphrase: ['This bundle is encrypted: give its passphrase.'] });
    try {
      b = await openBundle(raw, pass);
    } catch (err) {
      throw validationError({ bundle: [(err as Error).message] });
    }
  }
  if ((b as { format?: unknown }).format !== BUNDLE_FORMAT) {
    throw validationError({ bundle: [`Not a berth server transfer bundle (format ${BUNDLE_FORMAT}); Coolify's own bundles describe Coolify's records and are not read by berth.`] });
  }
  if ((b as { includes_secrets?: unknown }).includes_secrets === false) {
    throw validationError({ bundle: ['This bundle was exported without read:sensitive, so its keys, variables and passwords are missing: export it again with a read:sensitive token to import it.'] });
  }
  const parsed = bundleSchema.safeParse(b);
  if (!parsed.success) {
    const errors: Record<string, string[]> = {};
    for (const issue of parsed.error.issues.slice(0, 20)) (errors[['bundle', ...issue.path].join('.')] ??= []).push(issue.message);
    throw validationError(errors);
  }
  checkBundle(parsed.data);
  return parsed.data;
}

async function runImport(ctx: OperationContext, raw: Record<string, unknown>, o: { passphrase?: string; dryRun: boolean; preserveUuids: boolean; claim: boolean }) {
  const bundle = await readBundle(raw, o.passphrase);
  try {
    const summary = await atomically(ctx.db, async (trx) => {
      const s = await importBundle(trx, ctx.caller, bundle, {
        preserveUuids: o.preserveUuids,
        claim: o.claim,
        settleAddress: (a) => settleAddress(a, { engine_endpoint: a.engine_endpoint }, ctx.caller).address,
      });
      if (o.dryRun) throw new DryRun(s);
      return s;
    });
    return { ...summary, dry_run: false };
  } catch (err) {
    if (err instanceof DryRun) return { ...err.summary, dry_run: true };
    throw err;
  }
}

function needsSensitive(caller: Caller, what: string): void {
  if (!seesSensitive(caller.permissions)) {
    throw new BerthError('missing_permissions', {
      missingPermissions: ['read:sensitive'],
      heldPermissions: [...caller.permissions],
      message: `${what} sends the server's secrets: it needs read:sensitive.`,
    });
  }
}

/** Records the server's transfer state in one statement-level transaction (read, then write). */
async function setTransfer(ctx: OperationContext, uuid: string, next: (was: TransferState | null) => TransferState, usable?: 0) {
  return atomically(ctx.db, async (trx) => {
    const s = await owned(trx, 'servers', uuid, ctx.caller.teamId);
    const state = next(transferOf(s));
    await trx
      .updateTable('servers')
      .set({ transfer: JSON.stringify(state), ...(usable === 0 ? { is_usable: 0, is_reachable: 0 } : {}), updated_at: nowIso() })
      .where('id', '=', s.id)
      .execute();
    return { server: s, state };
  });
}

export const serverTransferOperations = [
  defineOperation({
    name: 'export_server',
    title: 'Export a server as a transfer bundle',
    description:
      "One server of this team with everything on it (destinations, the projects and environments its resources live in, applications, databases, services with their variables, volumes, files, scheduled tasks, backup schedules, the server's shared variables and SSH keys) as one JSON bundle for import_server on another berth instance. Secrets only with read:sensitive (without it they are null and the bundle cannot be imported). With passphrase, the bundle is sealed (scrypt + AES-256-GCM). Changes nothing.",
    summary: 'Export a server and its resources as a transfer bundle (secrets need read:sensitive; sealed with a passphrase when given).',
    permission: 'read',
    toolset: 'servers',
    input: () =>
      z.strictObject({
        uuid: uuidParam,
        encrypt: flag.optional().describe("Seal the bundle (Coolify's flag); needs passphrase."),
        passphrase: passphrase.optional().describe('Seal the bundle with this passphrase (scrypt + AES-256-GCM); import_server needs it again.'),
      }),
    output: () => z.record(z.string(), z.unknown()),
    annotations: READ,
    http: { method: 'GET', path: '/api/v1/servers/{uuid}/export' },
    async run(ctx, i) {
      if (i.encrypt === true && !i.passphrase) throw validationError({ passphrase: ['encrypt=true needs a passphrase.'] });
      const bundle = await exportFor(ctx, i.uuid, seesSensitive(ctx.caller.permissions));
      return (i.passphrase ? await sealBundle(bundle, i.passphrase) : bundle) as unknown as Record<string, unknown>;
    },
  }),
  defineOperation({
    name: 'import_server',
    title: 'Import a server transfer bundle',
    description:
      "Recreate a server from export_server's bundle (of another berth instance, or this one) in this team: server, destinations, resources and their settings, all or nothing. preserve_uuids (default true) keeps every uuid, so the containers and volumes already on the server's engine are the imported resources' (a uuid this instance has is a 409); false gives new uuids. claim (default true) lets this instance manage the server at once; then validate_server. dry_run checks and counts without writing.",
    summary: 'Import a server transfer bundle from another berth instance (all or nothing; 409 on a uuid this instance has).',
    permission: 'write',
    toolset: 'servers',
    input: () =>
      z.strictObject({
        bundle: z.record(z.string(), z.unknown()).describe("export_server's answer, as it came (sealed or not)."),
        passphrase: passphrase.optional().describe('The passphrase the bundle was sealed with.'),
        dry_run: flag.optional().describe('Check everything and answer what would be created, writing nothing.'),
        preserve_uuids: flag.optional().describe('Keep the uuids of the bundle (default true): the engine’s containers and volumes stay the resources’ own.'),
        claim: flag.optional().describe('Manage the server here at once (default true); false waits for claim_server.'),
      }),
    output: () => summarySchema,
    annotations: CREATE,
    http: { method: 'POST', path: '/api/v1/servers/import', status: 201 },
    unsupported: SERVER_TRANSFER_FIELDS.import,
    async run(ctx, i) {
      return runImport(ctx, i.bundle, { passphrase: i.passphrase, dryRun: i.dry_run === true, preserveUuids: i.preserve_uuids !== false, claim: i.claim !== false });
    },
  }),
  defineOperation({
    name: 'claim_server',
    title: 'Claim a server for this instance',
    description:
      'Make this instance the one that manages a server: one imported with claim=false, or one this instance transferred away (transfer/complete) and takes back. Then validate_server. Records the claim in the store; writes nothing on the host.',
    summary: 'Claim an imported (or transferred) server so this instance manages it.',
    permission: 'write',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam }),
    output: () =>
      z.object({
        server_uuid: z.string(),
        claim: z.object({
          instance_url: z.string().nullable(),
          server_uuid: z.string(),
          team_id: z.number().int(),
          claimed_at: z.string(),
          export_id: z.string().nullable(),
          schema_version: z.number().int(),
        }),
        sentinel_rebound: z.boolean(),
        claim_written: z.boolean(),
        message: z.string(),
      }),
    annotations: UPDATE,
    http: { method: 'POST', path: '/api/v1/servers/{uuid}/claim' },
    unsupported: SERVER_TRANSFER_FIELDS.claim,
    async run(ctx, { uuid }) {
      const at = new Date().toISOString();
      const { state } = await setTransfer(ctx, uuid, (was) => ({ ...was, status: 'claimed', export_id: was?.export_id ?? null, at, target_instance_url: null }));
      return {
        server_uuid: uuid,
        claim: { instance_url: instanceUrl(ctx), server_uuid: uuid, team_id: ctx.caller.teamId, claimed_at: at, export_id: state.export_id, schema_version: BUNDLE_VERSION },
        sentinel_rebound: false,
        claim_written: false,
        message: 'Server claimed: this instance manages it. Validate it (validate_server) before deploying.',
      };
    },
  }),
  defineOperation({
    name: 'complete_server_transfer',
    title: 'Mark a server as transferred away',
    description:
      'The source side of a transfer, after import_server succeeded elsewhere: this instance stops managing the server (not usable, no longer watched or cleaned, validate refused) but keeps its records; claim_server takes it back. Touches nothing on the engine.',
    summary: 'Mark a server as handed to another instance: this one stops managing it.',
    permission: 'write',
    toolset: 'servers',
    input: () => z.strictObject({ uuid: uuidParam, export_id: z.string().max(64).nullable().optional(), target_instance_url: z.string().max(2048).nullable().optional() }),
    output: () => z.object({ server_uuid: z.string(), message: z.string() }),
    annotations: { ...UPDATE, destructive: true },
    http: { method: 'POST', path: '/api/v1/servers/{uuid}/transfer/complete' },
    async run(ctx, i) {
      await setTransfer(
        ctx,
        i.uuid,
        (was) => ({ status: 'transferred', export_id: i.export_id ?? was?.export_id ?? null, at: new Date().toISOString(), target_instance_url: i.target_instance_url ?? null }),
        0,
      );
      return { server_uuid: i.uuid, message: 'Server marked as transferred: this instance no longer manages it.' };
    },
  }),
  defineOperation({
    name: 'migrate_server',
    title: 'Move a server to another berth instance',
    description:
      "One step: export this server with its secrets, import it on another berth instance (target_url, with a write token of the target team: target_token), then mark it transferred here. Needs read:sensitive and write. target_url must be https (http only on loopback); the operator's outbound rules apply. Nothing moves on the engine: the target takes over the running containers.",
    summary: 'Export a server, import it on another berth instance, and mark it transferred here (needs read:sensitive).',
    permission: 'write',
    toolset: 'servers',
    input: () =>
      z.strictObject({
        uuid: uuidParam,
        target_url: z.string().url().max(2048).describe('The other berth instance, e.g. https://berth.example.com.'),
        target_token: z.string().min(1).max(4096).describe('An API token of the target team with write.'),
        preserve_uuids: flag.optional().describe('Keep the uuids on the target (default true).'),
      }),
    output: () => z.object({ export_id: z.string(), server_uuid: z.string(), target_url: z.string(), target_server_uuid: z.string(), import: z.record(z.string(), z.unknown()), message: z.string() }),
    annotations: { readOnly: false, destructive: true, idempotent: false, openWorld: true },
    http: { method: 'POST', path: '/api/v1/servers/{uuid}/migrate' },
    unsupported: SERVER_TRANSFER_FIELDS.import,
    async run(ctx, i) {
      needsSensitive(ctx.caller, 'Migrating a server');
      const target = new URL(i.target_url);
      if (target.protocol !== 'https:' && !(target.protocol === 'http:' && classifyHost(target.hostname.replace(/^\[|\]$/g, '')) === 'loopback')) {
        throw validationError({ target_url: ['The bundle carries secrets: the target must be https (http only on loopback).'] });
      }
      const bundle = await exportFor(ctx, i.uuid, true);
      const guard = new TargetGuard(ctx.config.outboundAllowedTargets);
      const url = `${target.origin}${target.pathname.replace(/\/+$/, '').replace(/\/api\/v1$/, '')}/api/v1/servers/import`;
      let answer: { status: number; text: string };
      try {
        answer = await guard.fetch(url, {
          method: 'POST',
          headers: { authorization: `Bearer ${i.target_token}`, 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify({ bundle, preserve_uuids: i.preserve_uuids !== false, claim: true }),
          timeoutMs: 60_000,
        });
      } catch (err) {
        throw validationError({ target_url: [`The target could not be reached: ${(err as Error).message}`] });
      }
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(answer.text) as Record<string, unknown>;
      } catch {
        // Not JSON: the status says enough.
      }
      if (answer.status !== 201) {
        const why = typeof body.message === 'string' ? body.message : answer.text.slice(0, 300);
        throw new BerthError(answer.status === 409 ? 'conflict' : 'bad_request', { message: `The target answered ${answer.status} to the import: ${why} Nothing changed here.` });
      }
      await setTransfer(ctx, i.uuid, () => ({ status: 'transferred', export_id: bundle.export_id, at: new Date().toISOString(), target_instance_url: target.origin }), 0);
      return {
        export_id: bundle.export_id,
        server_uuid: i.uuid,
        target_url: target.origin,
        target_server_uuid: String(body.server_uuid ?? ''),
        import: body,
        message: 'Server migrated: the target instance manages it now; this one keeps the records, marked transferred.',
      };
    },
  }),
];
