import type { Command } from 'commander';
import { loadConfig } from '../config/config.js';
import { teamByRef } from '../core/admin.js';
import { listApprovals, personCaller, type ApprovalView } from '../core/approvals.js';
import { approvalOperations } from '../core/operations/approvals.js';
import { notFound } from '../errors.js';
import { createLogger } from '../logging/logger.js';
import type { Db } from '../store/db.js';
import { command, print, withStore, type DataOpts } from './command-helpers.js';

const line = (a: ApprovalView) => `${a.uuid}\t${a.status}\t${a.operation}\t${a.target ?? '-'}\t${JSON.stringify(a.arguments)}\texpires ${a.expires_at}`;

/**
 * `berth approvals list|approve|deny`: the operator's side of the approvals queue, on the store.
 * A decision is made as the person named by --email (an owner or admin of the approval's team
 * to approve), through the same operation the console runs: the call runs here, once, as the
 * token that asked. It runs the instance's background lifecycle while it lives, as `serve` and
 * `berth mcp` do (src/assemble.ts): a job the call starts runs here, its lease renewed, and the
 * command ends when it has; a job still waiting for its server's slot is handed back to the store.
 */
export function registerApprovals(program: Command): void {
  const approvals = program.command('approvals').description("decide the calls by agents that a team's approval policy holds");
  command(approvals, 'list', "list a team's approvals (pending first)")
    .requiredOption('--team <team>', 'team id or name')
    .option('--status <status>', 'pending, running, succeeded, failed, denied or expired')
    .action(
      withStore<DataOpts & { team: string; status?: string }>(async (db, o) => {
        const team = await teamByRef(db, o.team);
        const config = loadConfig({ ...process.env, BERTH_DATA: o.data });
        const page = await listApprovals(db, config, team.id, { status: o.status as never, page: 1, perPage: 100 });
        print(o, page.items, page.items.map(line).join('\n') || 'No approvals.');
      }),
    );
  for (const what of ['approve', 'deny'] as const) {
    command(approvals, what, what === 'approve' ? 'approve a held call: it runs once, now, as the token that asked' : 'deny a held call: it never runs')
      .argument('<uuid>', 'approval uuid')
      .requiredOption('--email <email>', 'the person deciding (to approve: an owner or admin of the team)')
      .action(async (uuid: string, o: DataOpts & { email: string }) =>
        withStore<DataOpts & { email: string }>(async (db) => {
          const view = await decideFromCli(db, o, uuid, what);
          print(o, view, `${view.uuid}: ${view.status}${view.error ? ` (${view.error.message})` : ''}`);
        })(o),
      );
  }
}

async function decideFromCli(db: Db, o: DataOpts & { email: string }, uuid: string, what: 'approve' | 'deny'): Promise<ApprovalView> {
  const row = await db
    .selectFrom('approvals as a')
    .innerJoin('team_members as m', 'm.team_id', 'a.team_id')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(['a.team_id', 'u.id as user_id'])
    .where('a.uuid', '=', uuid)
    .where('u.email', '=', o.email.trim().toLowerCase())
    .executeTakeFirst();
  // Not the person's team: the same answer as no such approval.
  if (!row) throw notFound();
  const config = loadConfig({ ...process.env, BERTH_DATA: o.data });
  const logger = createLogger({ level: config.logLevel, destination: 'stderr' });
  // The whole application (engines, workers, ...) loads only here: every other command starts without it.
  const { assembleCore } = await import('../assemble.js');
  const assembled = assembleCore(db, config, logger);
  // The same background lifecycle as `serve` and `berth mcp`: a job the approved call starts here
  // keeps its lease while it runs. Before the process ends it waits for the jobs running in it
  // (one cannot be handed over mid-run) and hands back what still waits, which a running instance
  // (or the next one to start) takes over.
  if (what === 'approve') await assembled.start();
  try {
    const caller = await personCaller(db, row.team_id, row.user_id, 'cli', '127.0.0.1');
    const op = approvalOperations.find((x) => x.name === `${what}_approval`)!;
    return (await assembled.core.run(op, caller, { uuid })) as ApprovalView;
  } finally {
    await assembled.stop({ finish: true });
    await assembled.close();
  }
}
