import type { ColumnType, Generated, Selectable } from 'kysely';

/** Timestamps are ISO-8601 UTC strings: portable between SQLite and PostgreSQL text columns. */
export interface SettingsTable {
  key: string;
  value: string;
}

export interface UsersTable {
  id: Generated<number>;
  email: string;
  name: string;
  created_at: string;
  updated_at: string;
}

export interface TeamsTable {
  id: Generated<number>;
  name: string;
  description: string | null;
  personal_team: number;
  created_at: string;
  updated_at: string;
}

export interface TeamMembersTable {
  team_id: number;
  user_id: number;
  role: 'owner' | 'admin' | 'member';
  created_at: string;
}

export interface ApiTokensTable {
  id: Generated<number>;
  name: string;
  user_id: number;
  team_id: number;
  /** Hex SHA-256 of the secret part; the secret itself is never stored. */
  token_hash: string;
  /** JSON array of permission names. */
  permissions: string;
  expires_at: string | null;
  last_used_at: string | null;
  created_at: string;
  /** Set when the row is a person's OAuth approval of a client (migration 024): its grant. */
  oauth_grant_id?: string | null;
  oauth_client_id?: string | null;
}

export interface OutboxTable {
  id: Generated<number>;
  /** What the message is about, unique per subject so it is queued once: "token-expiry:<id>". */
  dedupe_key: string;
  recipient: string;
  subject: string;
  body: string;
  /** pending → sending → sent; "kept" when no SMTP is configured; "unknown" when a send was cut off. */
  status: 'pending' | 'sending' | 'sent' | 'kept' | 'unknown';
  attempts: number;
  last_error: string | null;
  /** A failed send is retried after an exponential backoff. */
  next_attempt_at: string | null;
  created_at: string;
  sent_at: string | null;
}

export interface FeedbackTable {
  id: Generated<number>;
  content: string;
  user_id: number | null;
  team_id: number | null;
  source_ip: string;
  forwarded_at: string | null;
  created_at: string;
}

interface Timestamps {
  created_at: string;
  updated_at: string;
}

export interface PrivateKeysTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  team_id: number;
  name: string;
  description: string | null;
  private_key: string;
  /** `SHA256:…` of the public key, as `ssh-keygen -lf` prints it. */
  fingerprint: string;
  /** The authorized_keys line of the public half. */
  public_key: string | null;
}

export interface ServersTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  team_id: number;
  name: string;
  description: string | null;
  ip: string;
  port: number;
  user: string;
  private_key_id: number | null;
  engine_endpoint: string | null;
  /** JSON { ca, cert, key } PEM strings, or null. */
  engine_tls: string | null;
  is_reachable: number;
  is_usable: number;
  validated_at: string | null;
  validation_logs: string | null;
  /** SSH host key pinned at the first successful validate (`SHA256:…`), or given at create. */
  host_key_fingerprint: string | null;
  /** 1: the root team allows containers on this server to reach into the host (privileged, host binds, …). */
  host_access: number;
  /** JSON: Coolify's docker cleanup settings; null for the defaults. */
  docker_cleanup: string | null;
  /** JSON: the server's move between berth instances (migration 039); null: it never moved. */
  transfer: string | null;
  /** JSON: the server's reverse proxy settings (core/model/proxy.ts); null for the defaults. */
  proxy: string | null;
  /** JSON: the server's log drains (core/model/log-drains.ts, migration 044); null: none. */
  log_drains: string | null;
  /** What the last validate read of the engine's swarm state (0/1, migration 042). */
  is_swarm_manager: Generated<number>;
  is_swarm_worker: Generated<number>;
}

export interface DestinationsTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  team_id: number;
  server_id: number;
  name: string;
  network: string;
  /** The engine kind (Coolify's destination type): `standalone` or `swarm` (migration 042). */
  type: Generated<string>;
}

/** An application's copy on another server (migration 043; docs/decisions/additional-destinations.md). */
export interface ApplicationDestinationsTable extends Timestamps {
  id: Generated<number>;
  resource_id: number;
  destination_id: number;
  /** The destination's server (one copy per server). */
  server_id: number;
  /** The copy's engine state in Coolify's words, as last observed; null: never observed. */
  observed_status: ColumnType<string | null, string | null | undefined, string | null>;
  observed_at: ColumnType<string | null, string | null | undefined, string | null>;
}

/** A pull request's preview of an application (Coolify's application_previews). */
export interface ApplicationPreviewsTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  resource_id: number;
  pull_request_id: number;
  /** The preview's domains, made from the application's preview_url_template; null: none (the application has no domain). */
  fqdn: ColumnType<string | null, string | null | undefined, string | null>;
  /** The tag of the image its last deploy built (localhost/berth-app-<uuid>-pr-<N>); null: never built. */
  image_tag: ColumnType<string | null, string | null | undefined, string | null>;
  observed_status: ColumnType<string | null, string | null | undefined, string | null>;
  observed_at: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface ProjectsTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  team_id: number;
  name: string;
  description: string | null;
}

export interface EnvironmentsTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  project_id: number;
  name: string;
  description: string | null;
}

export type ResourceKind = 'application' | 'service' | 'postgresql' | 'mysql' | 'mariadb' | 'redis' | 'mongodb' | 'clickhouse' | 'dragonfly' | 'keydb';

export interface ResourcesTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  team_id: number;
  kind: ResourceKind;
  environment_id: number;
  destination_id: number;
  name: string;
  description: string | null;
  status: string;
  /** JSON: the kind's own fields (image, ports, passwords, compose, ...). */
  config: string;
  tags: string;
  /** The engine's state in Coolify's words (`running:healthy`, `exited`, ...), as last observed; null: never observed here. */
  observed_status: ColumnType<string | null, string | null | undefined, string | null>;
  /** JSON: each container's observed state (runtime/observe.ts ContainerObservation by name). */
  observed: ColumnType<string | null, string | null | undefined, string | null>;
  observed_at: ColumnType<string | null, string | null | undefined, string | null>;
  restart_count: ColumnType<number | null, number | null | undefined, number | null>;
  last_exit_code: ColumnType<number | null, number | null | undefined, number | null>;
  /** JSON: the delete flags while the engine part of a delete is retried; null: not being deleted. */
  deleting: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface EngineWatchLeasesTable {
  server_id: number;
  lease_owner: string;
  lease_until: number;
}

export interface EnvironmentVariablesTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  resource_id: number;
  key: string;
  value: string | null;
  is_preview: number;
  is_literal: number;
  is_multiline: number;
  is_shown_once: number;
  is_runtime: number;
  is_buildtime: number;
  comment: string | null;
}

export interface StoragesTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  resource_id: number;
  name: string;
  mount_path: string;
  container: string | null;
  engine_volume: string | null;
}

/** A file (with its content) or a directory written into a resource's container at mount_path. */
export interface FileStoragesTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  resource_id: number;
  mount_path: string;
  content: string | null;
  is_directory: number;
}

export interface DeploymentsTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  team_id: number;
  resource_id: number;
  server_id: number;
  /** deploy, start, stop, restart */
  kind: string;
  status: 'queued' | 'in_progress' | 'finished' | 'failed' | 'cancelled';
  force: number;
  logs: string;
  started_at: string | null;
  finished_at: string | null;
  /** The instance that queued or runs it, and until when (ms since the epoch) unless renewed. */
  lease_owner: ColumnType<string | null, string | null | undefined, string | null>;
  lease_until: ColumnType<number | null, number | null | undefined, number | null>;
  /** A rollback: the kept image tag this deployment runs instead of building or pulling. */
  rollback_tag: ColumnType<string | null, string | null | undefined, string | null>;
  /** A preview deployment: the pull request it builds; 0 for the application itself (Coolify's default). */
  pull_request_id: ColumnType<number, number | undefined, number>;
}

export interface MigrationJobsTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  team_id: number;
  resource_id: number;
  from_destination_id: number;
  to_destination_id: number;
  migrate_volumes: number;
  moves_data: number;
  status: string;
  progress: string;
  error: string | null;
  finished_at: string | null;
  /** The resource's status before the migration; a failed migration restores it. */
  previous_status: string | null;
  /** Stop on the source → switch done, when the resource was stopped for the last pass. */
  downtime_ms: number | null;
  /** JSON `Leftovers` (src/workers/leftovers.ts) still to remove on the source after the switch. */
  leftovers: ColumnType<string | null, string | null | undefined, string | null>;
  /** 1: the source's volume copies stay after the switch (listed as orphans of that server). */
  keep_source_volumes: ColumnType<number, number | undefined, number>;
  lease_owner: ColumnType<string | null, string | null | undefined, string | null>;
  lease_until: ColumnType<number | null, number | null | undefined, number | null>;
  /** 1: start the resource on the target right after the switch (else the caller redeploys). */
  start_on_destination: ColumnType<number, number | undefined, number>;
  /** The start deployment start_on_destination queued on the target (null until the switch, or when it could not be queued). */
  start_deployment_id: ColumnType<number | null, number | null | undefined, number | null>;
}

export interface DockerCleanupExecutionsTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  server_id: number;
  status: 'running' | 'success' | 'failed';
  message: string | null;
  cleanup_log: string | null;
  /** When a scheduled run was due (ISO); null for one asked for by hand. */
  scheduled_for: string | null;
  finished_at: string | null;
}

export interface S3StoragesTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  team_id: number;
  name: string;
  description: string | null;
  endpoint: string;
  bucket: string;
  region: string;
  /** Access key id and secret: sensitive. */
  key: string;
  secret: string;
  /** 1 after a successful validate; a failed one clears it. */
  is_usable: number;
}

export interface GitlabAppsTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  team_id: number;
  name: string;
  html_url: string;
  api_url: string;
  custom_user: string;
  custom_port: number;
  group_name: string | null;
  client_id: string | null;
  /** Secrets: sensitive. */
  client_secret: string | null;
  webhook_token: string;
  redirect_uri: string | null;
}

export interface CloudInitScriptsTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  team_id: number;
  name: string;
  /** A shell script (#!) or cloud-config YAML; may hold secrets. */
  script: string;
}

/** Coolify's GitHub app record (a source for private repositories); secrets kept, shown with read:sensitive. */
export interface GithubAppsTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  team_id: number;
  name: string;
  organization: string | null;
  api_url: string;
  html_url: string;
  custom_user: string;
  custom_port: number;
  app_id: number;
  installation_id: number;
  client_id: string;
  client_secret: string;
  webhook_secret: string | null;
  private_key_id: number;
}

/** A cloud provider's API token (Coolify's), stored for clients; berth does not call the provider. */
export interface CloudTokensTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  team_id: number;
  name: string;
  provider: string;
  token: string;
}

export interface ScheduledVolumeBackupsTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  storage_id: number;
  /** JSON: Coolify's schedule fields (frequency, enabled, retention, stop_during_backup, timeout, …). */
  settings: string;
}

export interface ScheduledVolumeBackupExecutionsTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  backup_id: number;
  status: 'running' | 'success' | 'failed';
  message: string | null;
  logs: string | null;
  size: ColumnType<number | null, number | null | undefined, number | null>;
  filename: string | null;
  scheduled_for: string | null;
  finished_at: string | null;
}

export interface ScheduledTasksTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  team_id: number;
  resource_id: number;
  name: string;
  command: string;
  frequency: string;
  /** A service's compose service name; null for an application (its one container). */
  container: string | null;
  /** Seconds. */
  timeout: number;
  enabled: number;
  /** The latest schedule time claimed (ISO); null before the first firing. */
  last_due: string | null;
}

export interface ScheduledTaskExecutionsTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  task_id: number;
  status: 'running' | 'success' | 'failed';
  message: string | null;
  /** The command's output (stdout and stderr as they came), its tail when long. */
  logs: string | null;
  exit_code: number | null;
  /** The schedule time this run stands for; null when run on demand. */
  scheduled_for: string | null;
  started_at: string;
  finished_at: string | null;
}

export interface TagsTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  team_id: number;
  /** Lower case, as Coolify keeps them; unique per team. */
  name: string;
}

export interface NotificationSettingsTable extends Timestamps {
  team_id: number;
  channel: string;
  /** JSON: the channel's fields as Coolify names them. */
  settings: string;
}

export interface NotificationsTable {
  id: Generated<number>;
  team_id: number;
  channel: string;
  event: string;
  /** `<subject>:<channel>`, unique: a message is queued once. */
  dedupe_key: string;
  title: string;
  body: string;
  /** JSON details for the generic webhook. */
  data: string;
  /** pending → sending → sent; failed after the last attempt; unknown when a send was cut off. */
  status: 'pending' | 'sending' | 'sent' | 'failed' | 'unknown';
  attempts: number;
  last_error: string | null;
  next_attempt_at: string | null;
  created_at: string;
  sent_at: string | null;
}

export interface Database {
  settings: SettingsTable;
  users: UsersTable;
  teams: TeamsTable;
  team_members: TeamMembersTable;
  api_tokens: ApiTokensTable;
  outbox: OutboxTable;
  feedback: FeedbackTable;
  private_keys: PrivateKeysTable;
  servers: ServersTable;
  destinations: DestinationsTable;
  application_destinations: ApplicationDestinationsTable;
  application_previews: ApplicationPreviewsTable;
  projects: ProjectsTable;
  environments: EnvironmentsTable;
  resources: ResourcesTable;
  environment_variables: EnvironmentVariablesTable;
  storages: StoragesTable;
  file_storages: FileStoragesTable;
  deployments: DeploymentsTable;
  migrations_jobs: MigrationJobsTable;
  notification_settings: NotificationSettingsTable;
  notifications: NotificationsTable;
  docker_cleanup_executions: DockerCleanupExecutionsTable;
  s3_storages: S3StoragesTable;
  cloud_init_scripts: CloudInitScriptsTable;
  github_apps: GithubAppsTable;
  cloud_tokens: CloudTokensTable;
  gitlab_apps: GitlabAppsTable;
  tags: TagsTable;
  scheduled_volume_backups: ScheduledVolumeBackupsTable;
  scheduled_volume_backup_executions: ScheduledVolumeBackupExecutionsTable;
  scheduled_tasks: ScheduledTasksTable;
  scheduled_task_executions: ScheduledTaskExecutionsTable;
  engine_watch_leases: EngineWatchLeasesTable;

  shared_environment_variables: import('./schema-shared-variables.js').SharedEnvironmentVariablesTable;
  oauth_store: import('./schema-oauth.js').OAuthStoreTable;

  scheduled_database_backups: ScheduledBackupsTable;
  scheduled_database_backup_executions: BackupExecutionsTable;

  console_sessions: import('./schema-console.js').ConsoleSessionsTable;
  login_links: import('./schema-console.js').LoginLinksTable;
  passkeys: import('./schema-console.js').PasskeysTable;
  webauthn_challenges: import('./schema-console.js').WebauthnChallengesTable;

  approval_policies: import('./schema-approvals.js').ApprovalPoliciesTable;
  approvals: import('./schema-approvals.js').ApprovalsTable;
  mcp_tasks: import('./schema-mcp-tasks.js').McpTasksTable;
  audit_log: import('./schema-audit.js').AuditLogTable;
}

export type UserRow = Selectable<UsersTable>;
export type TeamRow = Selectable<TeamsTable>;

export interface ScheduledBackupsTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  team_id: number;
  resource_id: number;
  description: string | null;
  enabled: number;
  save_s3: number;
  frequency: string;
  databases_to_backup: string | null;
  dump_all: number;
  database_backup_retention_amount_locally: number;
  database_backup_retention_days_locally: number;
  database_backup_retention_max_storage_locally: number;
  database_backup_retention_amount_s3: number;
  database_backup_retention_days_s3: number;
  database_backup_retention_max_storage_s3: number;
  timeout: number;
}

export type BackupExecutionStatus = 'running' | 'success' | 'failed';

export interface BackupExecutionsTable extends Timestamps {
  id: Generated<number>;
  uuid: string;
  backup_id: number;
  status: BackupExecutionStatus;
  message: string | null;
  logs: string | null;
  /** bigint: PostgreSQL hands it back as a string. */
  size: number | string | null;
  filename: string | null;
  database_name: string | null;
  scheduled_for: string | null;
  local_storage_deleted: number;
  finished_at: string | null;
  /** The last restore of this execution's file (033): null when never restored. */
  restore_status: BackupExecutionStatus | null;
  restore_message: string | null;
  restore_logs: string | null;
  restore_started_at: string | null;
  restore_finished_at: string | null;
}
