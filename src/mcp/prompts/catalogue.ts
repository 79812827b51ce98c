import { sql } from 'kysely';
import type { Caller } from '../../core/caller.js';
import { KINDS_OF } from '../../core/model/kinds.js';
import type { Db } from '../../store/db.js';
import type { CompletionKind } from '../completion/candidates.js';

/**
 * The workflows an agent is asked for most, as MCP prompts (issue 38): each names its arguments,
 * what each completes to, and builds the conversation's opening message from the team's own
 * records, so the agent starts from the real uuids, state and tools instead of guessing.
 */
export interface PromptArgument {
  name: string;
  description: string;
  required: boolean;
  /** The team's things this argument names (completion/complete offers their uuids and names). */
  completes?: CompletionKind;
}

export interface PromptContext {
  db: Db;
  caller: Caller;
}

export interface PromptDeclaration {
  name: string;
  title: string;
  description: string;
  arguments: readonly PromptArgument[];
  /** The user message's text; throws PromptArgumentError for an argument that names nothing of the team. */
  build(ctx: PromptContext, args: Record<string, string | undefined>): Promise<string>;
}

/** An argument that names nothing the caller's team has (answered as invalid params, like an unknown uri). */
export class PromptArgumentError extends Error {
  constructor(
    readonly argument: string,
    message: string,
  ) {
    super(message);
    this.name = 'PromptArgumentError';
  }
}

type Found = { uuid: string; name: string; kind?: string; status?: string };

/** One of the team's rows named by uuid or, failing that, by a name only one row has. */
async function resolve(db: Db, caller: Caller, kind: 'application' | 'server' | 'project' | 'destination', argument: string, ref: string): Promise<Found> {
  const table = kind === 'application' ? 'resources' : kind === 'server' ? 'servers' : kind === 'project' ? 'projects' : 'destinations';
  const extra = kind === 'application' ? sql` and kind in (${sql.join([...KINDS_OF.applications])})` : sql``;
  const cols = kind === 'application' ? sql`uuid, name, kind, coalesce(observed_status, status) as status` : sql`uuid, name`;
  const byUuid = await sql<Found>`select ${cols} from ${sql.table(table)} where team_id = ${caller.teamId}${extra} and uuid = ${ref}`.execute(db);
  if (byUuid.rows[0]) return byUuid.rows[0];
  const byName = await sql<Found>`select ${cols} from ${sql.table(table)} where team_id = ${caller.teamId}${extra} and name = ${ref} limit 2`.execute(db);
  if (byName.rows.length === 1) return byName.rows[0]!;
  const why = byName.rows.length > 1 ? `More than one ${kind} is named ${ref}: give its uuid.` : `No ${kind} of this team has the uuid or name ${ref}.`;
  throw new PromptArgumentError(argument, why);
}

const required = (args: Record<string, string | undefined>, name: string): string => {
  const v = args[name]?.trim();
  if (!v) throw new PromptArgumentError(name, `${name} is required.`);
  return v;
};

const GIT_URL = /^(https?:\/\/|git@|ssh:\/\/|git:\/\/)\S+$/;

export const PROMPTS: readonly PromptDeclaration[] = [
  {
    name: 'deploy_from_git',
    title: 'Deploy an application from a git repository',
    description: 'Create an application from a git repository on one of your servers and deploy it, following the deployment to its end.',
    arguments: [
      { name: 'repository', description: 'The repository URL (https://… for a public one, git@… for a private one with a deploy key).', required: true },
      { name: 'project', description: 'The project it belongs to (uuid or name).', required: true, completes: 'project' },
      { name: 'server', description: 'The server it runs on (uuid or name).', required: true, completes: 'server' },
      { name: 'branch', description: 'The branch to build (default: main).', required: false },
    ],
    async build({ db, caller }, args) {
      const repository = required(args, 'repository');
      if (!GIT_URL.test(repository)) throw new PromptArgumentError('repository', 'repository must be a git URL: https://…, git@host:owner/repo.git or ssh://….');
      const project = await resolve(db, caller, 'project', 'project', required(args, 'project'));
      const server = await resolve(db, caller, 'server', 'server', required(args, 'server'));
      const branch = args.branch?.trim() || 'main';
      const privateRepo = !/^https?:\/\//.test(repository);
      return [
        `Deploy ${repository} (branch ${branch}) as a new application in project "${project.name}" (${project.uuid}) on server "${server.name}" (${server.uuid}).`,
        '',
        'Steps:',
        privateRepo
          ? `1. Create it with create_private_deploy_key_application: git_repository "${repository}", git_branch "${branch}", project_uuid "${project.uuid}", server_uuid "${server.uuid}", environment_name "production", and private_key_uuid of a team key whose public half is a deploy key of the repository (list_private_keys; create_private_key if none).`
          : `1. Create it with create_public_application: git_repository "${repository}", git_branch "${branch}", build_pack "nixpacks" (berth detects Node, Python, Go or a static site; "dockerfile" if the repository has a Dockerfile), project_uuid "${project.uuid}", server_uuid "${server.uuid}", environment_name "production", ports_exposes for the port it listens on.`,
        '2. Deploy it with deploy (uuid: the new application\u2019s uuid). A build can take minutes: call it as a task if your client supports MCP tasks, or follow the deployment it names with get_deployment (or subscribe to berth://deployments/{uuid}) until it is finished or failed.',
        '3. When it has finished, read berth://applications/{uuid} (or get_application) to confirm the engine reports it running; if it failed, read the deployment log and say what went wrong.',
        'Tell me the application\u2019s uuid and its state at the end.',
      ].join('\n');
    },
  },
  {
    name: 'move_application',
    title: 'Move an application with its data to another server',
    description: 'Migrate an application and its volume data to a destination on another server, then start it there.',
    arguments: [
      { name: 'application', description: 'The application to move (uuid or name).', required: true, completes: 'application' },
      { name: 'destination', description: 'The destination to move it to (uuid or name; list_destinations shows them).', required: true, completes: 'destination' },
    ],
    async build({ db, caller }, args) {
      const app = await resolve(db, caller, 'application', 'application', required(args, 'application'));
      const dest = await resolve(db, caller, 'destination', 'destination', required(args, 'destination'));
      return [
        `Move application "${app.name}" (${app.uuid}, now ${app.status ?? 'unknown'}) with its volume data to destination "${dest.name}" (${dest.uuid}).`,
        '',
        'Steps:',
        `1. Call migrate_application with uuid "${app.uuid}", destination_uuid "${dest.uuid}", migrate_volumes true and start_on_destination true. The data is copied while it runs; it is stopped only for the last difference.`,
        '2. The copy can take long: call it as a task if your client supports MCP tasks; otherwise follow the migration it names with get_migration (or subscribe to berth://migrations/{uuid}) until done or failed.',
        `3. Confirm with berth://applications/${app.uuid} (or get_application) that it runs on the new server. If the team's policy holds the migration for a person's approval, give the person the approval link and wait.`,
        'Report the downtime the migration measured.',
      ].join('\n');
    },
  },
  {
    name: 'diagnose_application',
    title: 'Find out why an application fails',
    description: 'Gather an application\u2019s engine status, restarts, last exit code, latest deployment and recent logs, and explain why it fails.',
    arguments: [{ name: 'application', description: 'The application (uuid or name).', required: true, completes: 'application' }],
    async build({ db, caller }, args) {
      const app = await resolve(db, caller, 'application', 'application', required(args, 'application'));
      const last = await sql<{
        uuid: string;
        status: string;
        kind: string;
        created_at: string;
      }>`select d.uuid, d.status, d.kind, d.created_at from deployments d join resources r on r.id = d.resource_id where r.team_id = ${caller.teamId} and r.uuid = ${app.uuid} order by d.id desc limit 1`.execute(
        db,
      );
      const dep = last.rows[0];
      return [
        `Find out why application "${app.name}" (${app.uuid}) fails. berth last saw it as: ${app.status ?? 'unknown'}.`,
        dep ? `Its latest deployment is ${dep.uuid} (${dep.kind}, ${dep.status}, queued ${dep.created_at}).` : 'It has never been deployed.',
        '',
        'Steps:',
        `1. Read berth://applications/${app.uuid} (or get_application): engine status, restart count, last exit code, health.`,
        dep ? `2. Read deployment ${dep.uuid} with get_deployment (its log) if it did not finish.` : '2. If it was never deployed, say so: deploy it first.',
        `3. Read its recent container logs with get_application_logs (needs read:sensitive).`,
        '4. Explain the cause in plain words (crash loop, failing health check, wrong port, missing variable, image not found, …) and propose the fix; do not change anything without asking me.',
      ].join('\n');
    },
  },
  {
    name: 'recent_changes',
    title: 'What changed in this team recently',
    description: 'Summarise the team\u2019s audit log: who changed what, from which door, with what result, over a recent window.',
    arguments: [
      { name: 'hours', description: 'How far back to look, in hours (default 24, at most 720).', required: false },
      { name: 'application', description: 'Only changes to this application (uuid or name).', required: false, completes: 'application' },
    ],
    async build({ db, caller }, args) {
      const raw = args.hours?.trim();
      const hours = raw ? Number(raw) : 24;
      if (!Number.isInteger(hours) || hours < 1 || hours > 720) throw new PromptArgumentError('hours', 'hours must be a whole number from 1 to 720.');
      const app = args.application?.trim() ? await resolve(db, caller, 'application', 'application', args.application.trim()) : undefined;
      const from = new Date(Date.now() - hours * 3600_000).toISOString();
      return [
        `Summarise what changed in this team in the last ${hours} hours${app ? ` to application "${app.name}" (${app.uuid})` : ''}.`,
        '',
        `Call list_audit_entries with from "${from}"${app ? `, resource "${app.uuid}"` : ''} (page through all of it). Group the entries by person and resource; name failures and refusals (forbidden, approval_pending) apart; point out anything destructive (deletions, migrations, stops). Keep it short.`,
      ].join('\n');
    },
  },
];
