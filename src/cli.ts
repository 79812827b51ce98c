#!/usr/bin/env node
import { Command, Option } from 'commander';
import { command, fail, print, requireInstance, withStore, type DataOpts } from './cli/command-helpers.js';
import { registerMcpConfig } from './cli/mcp-config-command.js';
import { registerApprovals } from './cli/approvals-command.js';
import { registerAudit } from './cli/audit-command.js';
import { auditedChange, rootTeam, tokenFacts } from './core/audit/cli-door.js';
import type { Db } from './store/db.js';
import { loadConfig } from './config/config.js';
import * as admin from './core/admin.js';
import { BerthError } from './errors.js';
import { allowListOr422 } from './core/operations/instance-settings.js';
import { issueLoginLink, linkUrl, userByEmail } from './auth/login-links.js';
import { defaultPublicUrl } from './config/config.js';
import { probeInstance } from './store/instance.js';
import { readAuditRetentionDays, readSettings, writeAuditRetentionDays, writeSettings } from './store/settings.js';
import { parseToolsets, TOOLSET_WORDS } from './mcp/tools/toolsets.js';
import { BERTH_VERSION, COOLIFY_API_VERSION } from './version.js';

const VERSION_LINE = `berth ${BERTH_VERSION} (Coolify API ${COOLIFY_API_VERSION})`;

const program = new Command('berth')
  .description('Team-scoped infrastructure management for AI agents: HTTP API and MCP server.')
  .version(VERSION_LINE, '-V, --version', "print berth's version and the Coolify API version it follows")
  .configureOutput({ outputError: (s, write) => write(s.split('\n')[0] + '\n') });

command(program, 'init', 'create the root team, its owner and a root token')
  .option('--email <email>', "the owner's e-mail")
  .option('--team <name>', 'name of the root team', 'Root Team')
  .option('--api-disabled', 'start with the API turned off')
  .action(
    withStore<DataOpts & { email?: string; team: string; apiDisabled?: boolean }>(
      async (db, o) => {
        const args = { email: o.email, team: o.team, api_enabled: !o.apiDisabled };
        const r = await auditedChange(db, (trx) => admin.initInstance(trx, { email: o.email, team: o.team, apiEnabled: !o.apiDisabled }), {
          operation: 'init_instance',
          args,
          status: 201,
          facts: (r) => ({ teamId: r.team.id, userId: r.user.id, targets: [`team:${r.team.id}`, `user:${r.user.id}`] }),
        });
        print(o, r, `Created team "${r.team.name}" (id ${r.team.id}) owned by ${r.user.email}.\nRoot token (shown once, store it now):\n${r.token}`);
      },
      { init: true },
    ),
  );

command(program, 'serve', 'run the HTTP API (and the workers)', false)
  .addOption(new Option('--host <host>', 'address to listen on').env('HOST'))
  .addOption(new Option('--port <port>', 'port to listen on').env('PORT'))
  .action(async (o: DataOpts & { host?: string; port?: string }) => {
    try {
      const config = loadConfig({ ...process.env, BERTH_DATA: o.data, ...(o.host ? { HOST: o.host } : {}), ...(o.port ? { PORT: o.port } : {}) });
      // A first start creates the instance, but only where nothing else lives: a missing or empty
      // directory (or berth's own store not yet initialized), or a database without berth's tables.
      if ((await probeInstance(config.dataDir, config.databaseUrl)) === 'foreign') {
        throw new Error(`${config.dataDir} holds other files and no berth instance: give serve an empty or new directory, or check --data`);
      }
      const { startServer } = await import('./serve.js');
      const server = await startServer(config);
      console.log(`berth: listening on ${server.url}`);
      const stop = () => void server.close().then(() => process.exit(0));
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    } catch (err) {
      fail(err);
    }
  });

command(program, 'mcp', 'serve MCP on stdio for a desktop agent (token from BERTH_TOKEN)', false)
  .option('--read-only', 'expose read-only tools only')
  .option('--toolsets <list>', `tools to list: ${TOOLSET_WORDS.join(', ')} (default: the default set; the rest stay reachable through list_toolsets)`)
  .addOption(new Option('--api-url <url>', 'remote mode: run the tools against this berth or Coolify API (https://host[/api/v1])').env('BERTH_API_URL'))
  .action(async (o: DataOpts & { readOnly?: boolean; toolsets?: string; apiUrl?: string }) => {
    try {
      const toolsets = o.toolsets;
      parseToolsets(toolsets); // an unknown word fails here, before anything starts
      const config = loadConfig({ ...process.env, BERTH_DATA: o.data });
      if (o.apiUrl) {
        const { runRemoteStdio } = await import('./mcp/remote/remote-stdio.js');
        await runRemoteStdio({ apiUrl: o.apiUrl, token: process.env.BERTH_TOKEN, readOnly: Boolean(o.readOnly), toolsets, logLevel: config.logLevel });
        return;
      }
      await requireInstance(o);
      const { runStdio } = await import('./mcp/stdio.js');
      await runStdio(config, { token: process.env.BERTH_TOKEN, readOnly: Boolean(o.readOnly), toolsets });
    } catch (err) {
      fail(err);
    }
  });

const user = program.command('user').description('manage users');
command(user, 'create', 'create a user')
  .requiredOption('--email <email>', 'e-mail address')
  .option('--name <name>', 'display name')
  .action(
    withStore<DataOpts & { email: string; name?: string }>(async (db, o) => {
      const u = await auditedChange(db, (trx) => admin.createUser(trx, { email: o.email, name: o.name }), {
        operation: 'create_user',
        args: { email: o.email, name: o.name },
        status: 201,
        facts: async (u, trx) => ({ teamId: await rootTeam(trx), userId: u.id, targets: [`user:${u.id}`] }),
      });
      print(o, u, `Created user ${u.email} (id ${u.id}).`);
    }),
  );

command(program, 'login-link', 'print a one-time sign-in link for the web console (valid 15 minutes)')
  .requiredOption('--email <email>', "the person's e-mail")
  .option('--url <url>', 'the address people reach berth serve at (else BERTH_PUBLIC_URL, else http://localhost:<--port, PORT or 8000>)')
  .addOption(new Option('--port <port>', "berth serve's port, when it is not PORT here").env('PORT'))
  .addHelpText(
    'after',
    '\nThis command cannot ask the running server where it listens: give the address it is reached at\n(--url, BERTH_PUBLIC_URL or --port, as serve was given). The link says where its address came from.',
  )
  .action(
    withStore<DataOpts & { email: string; url?: string; port?: string }>(async (db, o) => {
      const config = loadConfig({ ...process.env, BERTH_DATA: o.data, ...(o.url ? { BERTH_PUBLIC_URL: o.url } : {}), ...(o.port ? { PORT: o.port } : {}) });
      const link = await auditedChange(db, (trx) => issueLoginLink(trx, o.email), {
        operation: 'issue_login_link',
        args: { email: o.email },
        status: 201,
        facts: async (l, trx) => ({ teamId: await rootTeam(trx), userId: l.userId, targets: [`user:${l.userId}`] }),
      });
      const url = linkUrl(config.publicUrl ?? defaultPublicUrl(config.host, config.port), link.token);
      const from = o.url ? '--url' : config.publicUrl ? 'BERTH_PUBLIC_URL' : `${o.port ? (process.env.PORT === o.port ? 'PORT' : '--port') : 'the default port'} ${config.port}`;
      print(o, { url, url_from: from, email: link.email, expires_at: link.expiresAt }, url);
      // On stderr, so `$(berth login-link …)` stays the link alone.
      if (!o.json) console.error(`(address from ${from}; ${config.publicUrl ? '' : 'if berth serve listens elsewhere, '}--url sets it)`);
    }),
  );

const team = program.command('team').description('manage teams and memberships');
command(team, 'create', 'create a team with an owner')
  .requiredOption('--name <name>', 'team name')
  .requiredOption('--owner <email>', "owner's e-mail")
  .action(
    withStore<DataOpts & { name: string; owner: string }>(async (db, o) => {
      const t = await auditedChange(db, (trx) => admin.createTeam(trx, { name: o.name, owner: o.owner }), {
        operation: 'create_team',
        args: { name: o.name, owner: o.owner },
        status: 201,
        facts: async (t, trx) => ({ teamId: t.id, userId: (await userByEmail(trx, o.owner.trim()))?.id ?? null, targets: [`team:${t.id}`] }),
      });
      print(o, t, `Created team "${t.name}" (id ${t.id}).`);
    }),
  );
command(team, 'add-member', 'add a user to a team, or change their role')
  .requiredOption('--team <team>', 'team id or name')
  .requiredOption('--email <email>', "member's e-mail")
  .requiredOption('--role <role>', 'owner, admin or member')
  .action(
    withStore<DataOpts & { team: string; email: string; role: string }>(async (db, o) => {
      const args = { team: o.team, email: o.email, role: o.role };
      const r = await auditedChange(db, (trx) => admin.addMember(trx, args), { operation: 'add_team_member', args, facts: membershipFacts });
      print(o, r, `${r.user.email} is now ${r.role} of "${r.team.name}".`);
    }),
  );
command(team, 'remove-member', 'remove a user from a team (their tokens for it are revoked)')
  .requiredOption('--team <team>', 'team id or name')
  .requiredOption('--email <email>', "member's e-mail")
  .action(
    withStore<DataOpts & { team: string; email: string }>(async (db, o) => {
      const args = { team: o.team, email: o.email };
      const r = await auditedChange(db, (trx) => admin.removeMember(trx, args), {
        operation: 'remove_team_member',
        args,
        // The entry names the tokens revoked with the membership, as `token revoke`'s names its one.
        facts: (m) => ({ ...membershipFacts(m), targets: [...membershipFacts(m).targets, ...m.revoked_tokens.map((id) => `token:${id}`)] }),
      });
      const revoked = r.revoked_tokens.length;
      print(o, r, `${r.user.email} left "${r.team.name}"${revoked ? ` (${revoked} token${revoked === 1 ? '' : 's'} revoked)` : ''}.`);
    }),
  );

const token = program.command('token').description('manage API tokens');
command(token, 'create', 'create a token (its value is printed once)')
  .requiredOption('--email <email>', "owner's e-mail")
  .requiredOption('--team <team>', 'team id or name')
  .requiredOption('--name <name>', 'token name')
  .requiredOption('--permissions <list>', 'comma-separated: read, read:sensitive, write, deploy, root')
  .requiredOption('--expires <period>', '7d, 30d, 60d, 90d, 1y or never')
  .action(
    withStore<DataOpts & { email: string; team: string; name: string; permissions: string; expires: string }>(async (db, o) => {
      const permissions = o.permissions
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean);
      const args = { email: o.email, team: o.team, name: o.name, permissions, expires: o.expires };
      const t = await auditedChange(db, (trx) => admin.createToken(trx, { ...args, permissions: permissions as never, expires: o.expires as never }), {
        operation: 'create_token',
        args,
        status: 201,
        facts: tokenFacts,
      });
      print(o, t, `Token ${t.id} created (expires ${t.expires_at ?? 'never'}). Shown once, store it now:\n${t.token}`);
    }),
  );
command(token, 'list', "list a team's tokens (never their values)")
  .requiredOption('--team <team>', 'team id or name')
  .action(
    withStore<DataOpts & { team: string }>(async (db, o) => {
      const rows = await admin.listTokens(db, o.team);
      const lines = rows.map(
        (r) =>
          `${r.id}\t${r.name}\t${r.email}\t${r.permissions.join(',')}\texpires ${r.expires_at ?? 'never'}\tlast used ${r.last_used_at ?? 'never'}${r.oauth_client_id ? `\tOAuth client ${r.oauth_client_id}` : ''}`,
      );
      print(o, rows, lines.join('\n') || 'No tokens.');
    }),
  );
command(token, 'revoke', 'delete a token; it stops working at once')
  .argument('<id>', 'token id')
  .action(async (id: string, o: DataOpts) =>
    withStore<DataOpts>(async (db) => {
      const n = /^[0-9]+$/.test(id) ? Number(id) : NaN;
      await auditedChange(
        db,
        async (trx) => {
          // Read before it goes: the entry belongs to the token's team, and names its holder.
          const held = Number.isSafeInteger(n) && n > 0 ? await trx.selectFrom('api_tokens').select(['team_id', 'user_id']).where('id', '=', n).executeTakeFirst() : undefined;
          await admin.revokeToken(trx, n);
          return held!;
        },
        { operation: 'revoke_token', args: { id }, facts: (held: { team_id: number; user_id: number }) => ({ teamId: held.team_id, userId: held.user_id, targets: [`token:${n}`] }) },
      );
      print(o, { id: Number(id), revoked: true }, `Token ${id} revoked.`);
    })(o),
  );

registerApprovals(program);

const settings = program.command('settings').description('instance settings');
command(settings, 'get', 'show the settings').action(
  withStore<DataOpts>(async (db, o) => {
    const s = await readSettings(db);
    const days = await readAuditRetentionDays(db);
    const data = { api_enabled: s.apiEnabled, mcp_enabled: s.mcpEnabled, allowed_ips: s.allowedIps, root_team_id: s.rootTeamId, audit_retention_days: days };
    print(
      o,
      data,
      `api-enabled: ${s.apiEnabled}\nmcp-enabled: ${s.mcpEnabled}\nallowed-ips: ${s.allowedIps || '(all)'}\nroot-team: ${s.rootTeamId ?? '(not initialized)'}\naudit-retention-days: ${days}`,
    );
  }),
);
command(settings, 'set', 'change a setting: api-enabled true|false, mcp-enabled true|false, allowed-ips "LIST", audit-retention-days DAYS')
  .argument('<key>', 'api-enabled, mcp-enabled, allowed-ips or audit-retention-days')
  .argument('<value>', 'the new value')
  .action(async (key: string, value: string, o: DataOpts) =>
    withStore<DataOpts>(async (db) => {
      await auditedChange(db, (trx) => setSetting(trx, key, value), { operation: 'update_settings', args: settingArgs(key, value), facts: async (_, trx) => ({ teamId: await rootTeam(trx) }) });
      const s = await readSettings(db);
      print(
        o,
        { api_enabled: s.apiEnabled, mcp_enabled: s.mcpEnabled, allowed_ips: s.allowedIps },
        `api-enabled: ${s.apiEnabled}\nmcp-enabled: ${s.mcpEnabled}\nallowed-ips: ${s.allowedIps || '(all)'}`,
      );
    })(o),
  );

/** One setting, checked as update_settings checks it (its arguments name the same fields). */
async function setSetting(db: Db, key: string, value: string): Promise<void> {
  if (key === 'api-enabled' || key === 'mcp-enabled') {
    if (value !== 'true' && value !== 'false') throw new BerthError('validation', { errors: { [key]: ['Use true or false.'] } });
    await writeSettings(db, key === 'api-enabled' ? { apiEnabled: value === 'true' } : { mcpEnabled: value === 'true' });
  } else if (key === 'audit-retention-days') {
    if (!/^[0-9]{1,4}$/.test(value) || Number(value) < 1 || Number(value) > 3650) throw new BerthError('validation', { errors: { [key]: ['Use a number of days from 1 to 3650.'] } });
    await writeAuditRetentionDays(db, Number(value));
  } else if (key === 'allowed-ips') {
    await writeSettings(db, { allowedIps: allowListOr422(value, 'allowed-ips') });
  } else {
    throw new BerthError('validation', { errors: { key: [`Unknown setting "${key}"; use api-enabled, mcp-enabled, allowed-ips or audit-retention-days.`] } });
  }
}

/** The audit entry's arguments: update_settings' field and the value as the operator typed it. */
function settingArgs(key: string, value: string): Record<string, unknown> {
  const field = { 'api-enabled': 'api_enabled', 'mcp-enabled': 'mcp_enabled', 'allowed-ips': 'allowed_ips', 'audit-retention-days': 'audit_retention_days' }[key];
  if (!field) return { setting: key, to: value };
  if (field === 'api_enabled' || field === 'mcp_enabled') return { [field]: value === 'true' ? true : value === 'false' ? false : value };
  return { [field]: field === 'audit_retention_days' && /^[0-9]{1,4}$/.test(value) ? Number(value) : value };
}

const membershipFacts = (r: { team: { id: number }; user: { id: number } }) => ({ teamId: r.team.id, userId: r.user.id, targets: [`team:${r.team.id}`, `user:${r.user.id}`] });

program
  .command('version')
  .description("print berth's version and the Coolify API version it follows")
  .action(() => console.log(VERSION_LINE));

registerMcpConfig(program);
registerAudit(program);

// `-v` is what people type first; commander takes one short flag for the version (-V).
if (process.argv[2] === '-v' && process.argv.length === 3) process.argv[2] = '--version';

// Not a top-level await: the shipped command is one CommonJS bundle (see src/launcher.ts).
program.parseAsync(process.argv).catch(fail);
