import { TOOLSETS, type Toolset } from '../core/operation.js';

/**
 * What an agent loads by default: the operations agents use most (find a resource or a migration target, read it,
 * deploy, start/stop/restart, logs, migrate, the teams and the API switch, the last two listed only to a root token
 * of the root team, as every tool is listed only to tokens that may call it). Every other operation stays one
 * call away (enable_toolsets, or describe_operation + call_operation), so the list an agent pays
 * for in every conversation stays small while nothing becomes unreachable.
 */
export const DEFAULT_TOOLS: readonly string[] = [
  'list_teams',
  'get_current_team',
  'enable_api',
  'disable_api',
  'list_resources',
  'list_destinations',
  'get_application',
  'get_database',
  'get_service',
  'deploy',
  'get_deployment',
  ...['application', 'database', 'service'].flatMap((k) => [`start_${k}`, `stop_${k}`, `restart_${k}`, `get_${k}_logs`]),
  'migrate_application',
  'migrate_database',
  'migrate_service',
  'get_migration',
];

export const TOOLSET_DESCRIPTIONS: Record<Toolset, string> = {
  teams: 'The current team, its members, every resource in one list, the version.',
  servers: 'Servers (SSH or local engines), their destinations and SSH private keys.',
  projects: 'Projects and their environments.',
  applications: 'Applications: create, update, delete, variables, volumes, lifecycle, logs, migrate.',
  databases: 'Databases of each type: create, update, delete, variables, volumes, lifecycle, logs, migrate.',
  services: 'Docker compose services: create, update, delete, variables, volumes, lifecycle, logs, migrate.',
  deployments: 'Deployments and migrations: deploy, follow, cancel, history.',
  settings: "Instance settings: API toggle and allow-list (root team's root token).",
  feedback: 'Feedback to the people who run this instance.',
  tags: 'Tags: the team\'s tag records, tags on applications, databases and services (deploy by tag).',
  shared_variables: 'Shared variables of the team, a project, an environment or a server, referenced from resource variables as {{team.KEY}}.',
  backups: 'Database backups: scheduled and on-demand dumps, their executions, restore.',
  notifications: 'Team notifications: e-mail, Discord, Slack, Telegram, Pushover and webhook settings, and which events each sends.',
};

/** `--toolsets` (and the HTTP header or query): group names, `default`, or `all`. */
export const TOOLSET_WORDS = ['default', 'all', ...TOOLSETS] as const;

export interface ToolSelection {
  /** Every operation listed; no meta tools are needed. */
  all: boolean;
  /** The default set is part of the list. */
  defaults: boolean;
  groups: Toolset[];
}

export const DEFAULT_SELECTION: ToolSelection = { all: false, defaults: true, groups: [] };

/** Parses a comma-separated selection; unknown words are an error that lists the accepted ones. */
export function parseToolsets(spec: string | undefined): ToolSelection {
  const words = (spec ?? '').split(',').map((w) => w.trim().toLowerCase()).filter(Boolean);
  if (!words.length) return DEFAULT_SELECTION;
  const unknown = words.filter((w) => !(TOOLSET_WORDS as readonly string[]).includes(w));
  if (unknown.length) throw new Error(`unknown toolset ${unknown.join(', ')}; use ${TOOLSET_WORDS.join(', ')}`);
  return {
    all: words.includes('all'),
    defaults: words.includes('default'),
    groups: TOOLSETS.filter((t) => words.includes(t)),
  };
}

/** Whether an operation is listed under a selection. */
export function selects(sel: ToolSelection, op: { name: string; toolset: Toolset }): boolean {
  return sel.all || (sel.defaults && DEFAULT_TOOLS.includes(op.name)) || sel.groups.includes(op.toolset);
}
