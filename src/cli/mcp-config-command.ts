import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import * as admin from '../core/admin.js';
import { BerthError } from '../errors.js';
import { openStore } from '../store/db.js';
import { command, fail, requireInstance, storeOf, type DataOpts } from './command-helpers.js';
import { auditedChange, tokenFacts } from '../core/audit/cli-door.js';
import {
  baseUrlOf,
  clientEntry,
  CLIENTS,
  defaultConfigFile,
  mergeEntry,
  NotMergeable,
  PLACEHOLDER_TOKEN,
  placementHint,
  printedDocument,
  readConfigFile,
  writeAtomically,
  type Client,
  type Target,
} from './mcp-config.js';

interface McpConfigOpts extends DataOpts {
  client: string;
  http?: string;
  write?: boolean;
  dryRun?: boolean;
  configFile?: string;
  email?: string;
  team?: string;
  permissions: string;
  expires: string;
}

/** This installation's entry point, as the client must start it: the real file, whatever link or directory ran it. */
function entryPoint(): string {
  return fs.realpathSync(process.argv[1]!);
}

export function registerMcpConfig(program: Command): void {
  command(program, 'mcp-config', "print (or --write) an MCP client's configuration for this berth, with a token made for it", false)
    .requiredOption('--client <client>', CLIENTS.join(', '))
    .option('--http <url>', 'connect to a running berth at this URL (its /mcp) instead of starting `berth mcp`')
    .option('--write', "merge the entry into the client's configuration file (only the berth entry is replaced)")
    .option('--dry-run', 'print the entry with a placeholder token and make nothing (with --write: write nothing)')
    .option('--config-file <file>', "the client's configuration file (default: where the client reads it)")
    .option('--email <email>', "the token's holder (default: the root team's first owner)")
    .option('--team <team>', "the token's team, id or name (default: the root team)")
    .option('--permissions <list>', 'comma-separated: read, read:sensitive, write, deploy, root', 'read,write,deploy')
    .option('--expires <period>', '7d, 30d, 60d, 90d, 1y or never', '1y')
    .action(async (o: McpConfigOpts) => {
      try {
        await run(o);
      } catch (err) {
        fail(err);
      }
    });
}

async function run(o: McpConfigOpts): Promise<void> {
  if (!(CLIENTS as readonly string[]).includes(o.client)) {
    throw new BerthError('validation', { errors: { client: [`Unknown client "${o.client}"; use ${CLIENTS.join(', ')}.`] } });
  }
  const client = o.client as Client;
  const baseUrl = o.http === undefined ? undefined : baseUrlOf(o.http);
  const file = path.resolve(o.configFile ?? defaultConfigFile(client));
  // Everything that can refuse does so before the token exists: the instance, the client's file.
  await requireInstance(o);
  let existing: Record<string, unknown> | null = null;
  // A file berth will not rewrite (comments) still gets its entry: printed, for a person to add.
  let refused: NotMergeable | undefined;
  if (o.write) {
    try {
      existing = readConfigFile(file);
      mergeEntry(client, existing, {});
    } catch (err) {
      if (!(err instanceof NotMergeable)) throw err;
      refused = err;
    }
  }

  const { dataDir, databaseUrl } = storeOf(o);
  const db = await openStore(dataDir, databaseUrl);
  let issued: admin.IssuedToken | undefined;
  try {
    const holder = o.email === undefined || o.team === undefined ? await admin.rootOwner(db) : undefined;
    const permissions = o.permissions
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean);
    const args = { email: o.email ?? holder!.email, team: o.team ?? holder!.team, name: `mcp-config ${client}`, permissions, expires: o.expires };
    const input = { ...args, permissions: permissions as never, expires: o.expires as never };
    // A dry run is refused by the same rules and makes nothing; a token is audited as `berth token create`'s.
    if (o.dryRun) await admin.checkToken(db, input);
    else issued = await auditedChange(db, (trx) => admin.createToken(trx, input), { operation: 'create_token', args, status: 201, facts: tokenFacts });
  } finally {
    await db.destroy();
  }

  const token = issued?.token ?? PLACEHOLDER_TOKEN;
  const target: Target =
    baseUrl === undefined
      ? { kind: 'stdio', command: process.execPath, args: [entryPoint(), 'mcp', '--data', dataDir], env: tokenEnv(token, databaseUrl) }
      : client === 'claude-desktop'
        ? // Claude Desktop's file takes no URL with headers: remote mode is a local stdio server calling that berth's API.
          { kind: 'stdio', command: process.execPath, args: [entryPoint(), 'mcp', '--api-url', baseUrl], env: { BERTH_TOKEN: token } }
        : { kind: 'http', url: `${baseUrl}/mcp`, headers: { Authorization: `Bearer ${token}` } };
  const entry = clientEntry(client, target);

  // stdout carries the entry (never the client's file, whose other entries may hold secrets); stderr says the rest.
  if (!o.write || o.dryRun || refused) {
    console.log(JSON.stringify(printedDocument(client, entry), null, 2));
    if (issued) console.error(`berth: token ${issued.id} made for this client (expires ${issued.expires_at ?? 'never'}); it is shown once, above.`);
    else console.error(`berth: a dry run: no token made; put one (berth token create, or this command without --dry-run) in place of ${PLACEHOLDER_TOKEN}.`);
    if (refused) throw new Error(`${refused.message}: add the entry printed above by hand`);
    console.error(`berth: ${o.write ? `--write would merge it into ${file} (nothing written)` : placementHint(client, file)}`);
    return;
  }
  try {
    writeAtomically(file, `${JSON.stringify(mergeEntry(client, existing, entry), null, 2)}\n`);
  } catch (err) {
    // No file, no token: one that nothing holds would only wait to leak.
    await revokeUnwritten(dataDir, databaseUrl, issued!.id);
    throw err;
  }
  console.log(`berth: wrote the "berth" entry to ${file} (token ${issued!.id}, expires ${issued!.expires_at ?? 'never'}); restart the client to load it.`);
}

/** Revokes the token of a file that could not be written, audited as `berth token revoke`'s. */
async function revokeUnwritten(dataDir: string, databaseUrl: string | null, id: number): Promise<void> {
  const db = await openStore(dataDir, databaseUrl);
  try {
    await auditedChange(
      db,
      async (trx) => {
        const held = await trx.selectFrom('api_tokens').select(['team_id', 'user_id']).where('id', '=', id).executeTakeFirstOrThrow();
        await admin.revokeToken(trx, id);
        return held;
      },
      { operation: 'revoke_token', args: { id: String(id) }, facts: (held) => ({ teamId: held.team_id, userId: held.user_id, targets: [`token:${id}`] }) },
    );
  } finally {
    await db.destroy();
  }
}

/** The stdio server's environment: its token, and the PostgreSQL store when the instance lives there. */
function tokenEnv(token: string, databaseUrl: string | null): Record<string, string> {
  return databaseUrl ? { BERTH_TOKEN: token, DATABASE_URL: databaseUrl } : { BERTH_TOKEN: token };
}
