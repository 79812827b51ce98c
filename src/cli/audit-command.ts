import type { Command } from 'commander';
import { listAudit } from '../core/audit/query.js';
import * as admin from '../core/admin.js';
import { auditOperations } from '../core/operations/audit.js';
import { issuesToErrors } from '../core/validation.js';
import { validationError } from '../errors.js';
import { command, print, withStore, type DataOpts } from './command-helpers.js';

interface AuditOpts extends DataOpts {
  team: string;
  from?: string;
  to?: string;
  user?: string;
  token?: string;
  operation?: string;
  resource?: string;
  result?: string;
  page?: string;
  perPage?: string;
}

/** The filters are list_audit_entries' own input, checked by its declaration. */
const filterSchema = auditOperations[0]!.input;

/** `berth audit`: an operator reads a team's audit log from the store, as GET /api/v1/audit shows it to the team. */
export function registerAudit(program: Command): void {
  command(program, 'audit', "show a team's audit log, newest first (every change, from every door)")
    .requiredOption('--team <team>', 'team id or name')
    .option('--from <time>', 'entries at or after this ISO-8601 time')
    .option('--to <time>', 'entries at or before this ISO-8601 time')
    .option('--user <user>', 'a user id or e-mail')
    .option('--token <id>', 'a token id')
    .option('--operation <name>', 'an operation name, e.g. delete_application')
    .option('--resource <uuid>', 'a uuid the call named, made or started')
    .option('--result <result>', 'ok, error, forbidden or an error kind')
    .option('--page <n>', 'page, from 1')
    .option('--per-page <n>', 'entries per page, at most 100')
    .action(
      withStore<AuditOpts>(async (db, o) => {
        const { page, perPage, team: teamRef, data: _d, json: _j, ...rest } = o;
        const parsed = filterSchema.safeParse({ ...rest, ...(page ? { page } : {}), ...(perPage ? { per_page: perPage } : {}) });
        if (!parsed.success) throw validationError(issuesToErrors(parsed.error.issues));
        const team = await admin.teamByRef(db, teamRef);
        const { page: p, per_page, ...filter } = parsed.data;
        const r = await listAudit(db, team.id, filter, { page: p, per_page });
        const lines = r.items.map(
          (e) =>
            `${e.at}\t${e.operation}\t${e.result} ${e.status}\t${e.door}\t${e.user_email ?? (e.user_id === null ? 'operator' : `user ${e.user_id}`)}${e.oauth_client_id ? ` via OAuth client ${e.oauth_client_id}` : e.token_id === null ? '' : ` token ${e.token_id}`}\t${e.source_ip ?? ''}\t${e.duration_ms} ms\t${e.targets.join(',')}${e.started_uuid ? `\tstarted ${e.started_uuid}` : ''}`,
        );
        const footer = r.total > r.items.length ? `\n(page ${r.page}: ${r.items.length} of ${r.total}; --page for more)` : '';
        print(o, r, lines.length ? lines.join('\n') + footer : 'No entries.');
      }),
    );
}
