/**
 * What an agent reads about each tool: a title and a description saying when to use it, what it
 * changes and what to do next. Everything else about a tool comes from its operation.
 */
export interface ToolText {
  title: string;
  description: string;
}

const explicit: Record<string, ToolText> = {
  list_teams: {
    title: 'List teams',
    description: 'The teams this token sees: a token is bound to one team, so only that one.',
  },
  get_current_team: {
    title: 'Get current team',
    description: 'The team this token is bound to; every resource you can see or change belongs to it.',
  },
  list_current_team_members: {
    title: 'List team members',
    description: "List the members of this token's team with their roles (owner, admin, member). Read-only; no secrets are included.",
  },
  get_team: {
    title: 'Get team by id',
    description: "Get a team by its numeric id. Only this token's own team is visible; any other id answers 'Resource not found.'",
  },
  list_team_members: {
    title: 'List members of a team',
    description: "List the members of a team by its numeric id. Only this token's own team is visible.",
  },
  enable_api: {
    title: 'Enable the API',
    description: 'Turn API access on, instance-wide; works while it is off. Root token of the root team.',
  },
  disable_api: {
    title: 'Disable the API',
    description: 'Turn API access off, instance-wide: every API, MCP and stdio call is refused until enable_api. Root token of the root team.',
  },
  enable_mcp: {
    title: 'Enable the MCP server',
    description: 'Turn the MCP server (/mcp and stdio) back on for the whole instance. Root token of the root team; over stdio it works while MCP is disabled (the way back).',
  },
  disable_mcp: {
    title: 'Disable the MCP server',
    description:
      "Turn the MCP server off for the whole instance: /mcp and stdio refuse every call with 'MCP server is disabled.' until enable_mcp (or POST /api/v1/mcp/enable); the REST API stays. Root token of the root team. Use with care.",
  },
  get_settings: {
    title: 'Get instance settings',
    description: 'Read the instance-wide settings: whether the API and the MCP server are enabled, and the source-address allow-list. Root token of the root team.',
  },
  update_settings: {
    title: 'Update instance settings',
    description:
      'Change the source-address allow-list (comma-separated IPv4/IPv6 addresses and CIDR ranges; empty or 0.0.0.0 allows all; redundant entries are removed) or the API toggle. Make sure your own address stays allowed. Root token of the root team.',
  },
  send_feedback: {
    title: 'Send feedback',
    description: 'Send feedback about berth (10 to 2000 characters) to the people who run this instance. Any valid token may call it.',
  },
  get_version: { title: 'Get berth version', description: 'The version of this berth instance. Read-only; useful to check which API features are available.' },
  list_resources: {
    title: 'List all resources',
    description: 'Every application, database and service of your team, with status, type and where each lives. Start here to find a uuid.',
  },
  list_private_keys: { title: 'List private keys', description: "List the team's SSH private keys (name, fingerprint, public key). Key material never appears in a list." },
  create_private_key: {
    title: 'Store a private key',
    description: 'Store an SSH private key (OpenSSH or PEM, no passphrase). Returns its uuid for create_server; get_private_key shows its public_key, which goes into authorized_keys on the server.',
  },
  get_private_key: { title: 'Get a private key', description: 'Get one private key: public_key (the authorized_keys line) and SHA256 fingerprint; the private part only with read:sensitive.' },
  update_private_key: { title: 'Update a private key', description: "Change a private key's name, description or key material." },
  delete_private_key: { title: 'Delete a private key', description: 'Delete a private key. Refused while a server still uses it.' },
  list_servers: {
    title: 'List servers',
    description: "List the team's servers with their engine endpoint and state (is_reachable, is_usable, is_managed). Use the uuid for create_application and migrate.",
  },
  create_server: {
    title: 'Register a server',
    description:
      'Register a server: ip, user (default root) and private_key_uuid reach its Docker socket over SSH (or engine_endpoint ssh://user@host:port/socket, tcp://host:port). Then call validate_server. A default destination is created with it.',
  },
  get_server: {
    title: 'Get a server',
    description: 'Get a server: address, transport, engine endpoint, pinned SSH host key, and whether it is reachable and managed. TLS key material needs read:sensitive.',
  },
  update_server: {
    title: 'Update a server',
    description: 'Change a server. A new address, key or endpoint clears its validation: call validate_server again. host_key_fingerprint: null forgets a pinned host key.',
  },
  delete_server: { title: 'Delete a server', description: 'Delete a server and its destinations. Refused while applications, databases or services live on it: migrate or delete them first.' },
  validate_server: {
    title: 'Validate a server',
    description:
      "Check the server's Docker engine (over SSH: log in, pin the host key on first success) and record whether it is reachable and usable; validation_logs says what is wrong. accept_host_key: true trusts a changed host key. Needed before deploying or moving data.",
  },
  list_server_destinations: { title: 'List destinations of a server', description: 'List the destinations (Docker networks) of one server. Resources are placed on a destination.' },
  create_server_destination: { title: 'Add a destination', description: 'Add a destination (a Docker network) to a server. Use its uuid as destination_uuid when creating or migrating resources.' },
  get_server_domains: { title: 'Domains on a server', description: 'The domains of the applications on a server, each with the server address: what their DNS records should point at.' },
  list_cloud_init_scripts: {
    title: 'List cloud-init scripts',
    description: "The team's cloud-init scripts (name; the text needs read:sensitive). berth keeps them for servers a cloud provisions; it does not run them itself.",
  },
  create_cloud_init_script: {
    title: 'Store a cloud-init script',
    description: 'Store a cloud-init script: a shell script starting with #! or cloud-config YAML (checked). It may hold secrets: reading its text needs read:sensitive.',
  },
  get_cloud_init_script: { title: 'Get a cloud-init script', description: 'One cloud-init script; its text only with read:sensitive.' },
  update_cloud_init_script: { title: 'Update a cloud-init script', description: "Change a cloud-init script's name or text (same checks as create)." },
  delete_cloud_init_script: { title: 'Delete a cloud-init script', description: 'Delete a cloud-init script from the team; servers already provisioned with it are not touched.' },
  create_service_storage: {
    title: 'Add a service volume',
    description:
      'Add a named volume to one container of a service (resource_uuid from list_service_applications or list_service_databases) at mount_path; written into the compose file, mounted at the next deploy.',
  },
  update_service_storage: {
    title: 'Move a service volume',
    description: 'Mount a volume added with create_service_storage (storage_uuid) at another mount_path; its data stays. Volumes written in the compose file are changed there (update_service).',
  },
  delete_service_storage: { title: 'Remove a service volume', description: "Remove a volume added with create_service_storage from the service's compose file; the engine volume and its data stay." },
  list_gitlab_apps: { title: 'List GitLab apps', description: "The team's GitLab app records (Coolify's), by integer id; client_secret and webhook_token need read:sensitive." },
  create_gitlab_app: {
    title: 'Record a GitLab app',
    description:
      'Store a GitLab app record: name and html_url (api_url defaults to html_url/api/v4, SSH user git, port 22; a webhook token is generated unless given). berth does not call GitLab with it.',
  },
  update_gitlab_app: { title: 'Change a GitLab app', description: 'Change a GitLab app record by gitlab_app_id; a new html_url without api_url moves api_url with it.' },
  delete_gitlab_app: { title: 'Delete a GitLab app', description: 'Delete a GitLab app record by gitlab_app_id.' },
  list_s3_storages: { title: 'List S3 storages', description: "The team's S3-compatible storages (backup targets): endpoint, bucket, region, is_usable. Keys need read:sensitive." },
  create_s3_storage: {
    title: 'Add an S3 storage',
    description: 'Add an S3-compatible storage (endpoint URL, bucket, region, key, secret). Then call validate_s3_storage. Private or loopback endpoints need the operator to allow them.',
  },
  get_s3_storage: { title: 'Get an S3 storage', description: 'One S3 storage; key and secret only with read:sensitive.' },
  update_s3_storage: { title: 'Update an S3 storage', description: 'Change an S3 storage. A new endpoint, bucket, region or key clears is_usable: validate again.' },
  delete_s3_storage: { title: 'Delete an S3 storage', description: "Delete an S3 storage's record from berth; the bucket and its objects stay." },
  validate_s3_storage: {
    title: 'Validate an S3 storage',
    description: 'List the bucket with the stored keys (AWS Signature V4) and record is_usable; the message says what is wrong (bucket, key, secret, endpoint).',
  },
  get_server_docker_cleanup: {
    title: 'Get Docker cleanup settings',
    description:
      "A server's Docker cleanup settings: schedule (docker_cleanup_frequency, UTC cron or hourly/daily/...), whether every unused image goes (force_docker_cleanup), and whether unused volumes and networks go too.",
  },
  update_server_docker_cleanup: {
    title: 'Set Docker cleanup settings',
    description: "Change a server's Docker cleanup schedule or what it removes. Volumes and networks that berth's records name are always kept.",
  },
  run_server_docker_cleanup: {
    title: 'Run a Docker cleanup',
    description:
      "Free space on a server's engine now: dangling images and build cache (every unused image with force_docker_cleanup), and unused volumes/networks when asked. A stopped resource's data is kept. Follow with list_server_docker_cleanup_executions.",
  },
  list_server_docker_cleanup_executions: { title: 'List Docker cleanups', description: 'The 20 most recent Docker cleanups of a server, newest first: status (running, success, failed) and message.' },
  list_server_resources: { title: 'List resources on a server', description: 'List the applications, databases and services that live on one server.' },
  list_server_orphans: {
    title: 'List orphans on a server',
    description: 'List containers and volumes berth made on a server that no record names any more (a delete that could not reach the engine, or removed records). Asks the engine.',
  },
  list_destinations: { title: 'List destinations', description: "List every destination (Docker network) on the team's servers; a migration's target is a destination_uuid from here." },
  get_destination: { title: 'Get a destination', description: 'Get one destination and the server it belongs to.' },
  update_destination: { title: 'Rename a destination', description: 'Rename a destination. The Docker network itself does not change.' },
  delete_destination: { title: 'Delete a destination', description: 'Delete a destination. Refused while resources are attached to it.' },
  list_projects: { title: 'List projects', description: "List the team's projects. Resources live in a project's environment." },
  create_project: { title: 'Create a project', description: 'Create a project. It starts with one environment, "production". Returns its uuid for create_application and friends.' },
  get_project: { title: 'Get a project', description: 'Get a project with its environments.' },
  update_project: { title: 'Update a project', description: "Change a project's name or description." },
  delete_project: { title: 'Delete a project', description: 'Delete a project and its environments. Refused while it holds resources.' },
  list_environments: { title: 'List environments', description: 'List the environments of a project (production, staging, ...).' },
  create_environment: { title: 'Create an environment', description: 'Add an environment to a project; use its name or uuid when creating resources.' },
  list_applications: { title: 'List applications', description: "List the team's applications (paginated; filter by tag)." },
  create_application: {
    title: 'Create an application from an image',
    description:
      "Create an application that runs a Docker image on a server, in a project environment. Needs project_uuid, server_uuid, environment_name (or environment_uuid) and docker_registry_image_name. Nothing runs until you deploy (or pass instant_deploy: true). Also takes Coolify's health_check_*, limits_*, custom_labels, custom_docker_run_options.",
  },
  list_tags: { title: 'List tags', description: "The team's tags (uuid, name). Deploy everything that carries one with deploy(tag)." },
  create_tag: { title: 'Create a tag', description: 'Create a tag (2-64 letters, digits, . _ -; stored lower case, unique in the team). Attach it with add_application_tags and friends.' },
  update_tag: { title: 'Rename a tag', description: 'Rename a tag; every application, database and service carrying it carries the new name.' },
  delete_tag: { title: 'Delete a tag', description: 'Delete a tag; the resources that carried it lose it (they are not deleted).' },
  create_dockerfile_application: {
    title: 'Create an application from a Dockerfile',
    description:
      "Create an application whose image is built from an inline Dockerfile (base64, as Coolify) on the server's engine at each deploy. Placement as create_application, plus ports_exposes. Deploy to build; the build output is in the deployment's logs. Runtime fields as create_application.",
  },
  create_public_application: {
    title: 'Create an application from a git repository',
    description:
      'Create an application built from a public git repository (git_repository, git_branch, build_pack "dockerfile", base_directory, dockerfile_location) on the server\'s engine at each deploy. A failed build fails the deployment and leaves the running container alone. Runtime fields as create_application.',
  },
  create_private_deploy_key_application: {
    title: 'Create an application from a private repository (deploy key)',
    description:
      "Create an application built from a private git repository cloned over SSH with one of the team's private keys (private_key_uuid; its public half must be a deploy key of the repository). git_repository as git@host:owner/repo.git or ssh://user@host:port/path; git_host_key (the host's key as ssh-keyscan prints it) is checked, else the key seen at the first clone is pinned and a changed one refused. Otherwise as create_public_application.",
  },
  create_private_github_app_application: {
    title: 'Create an application through a GitHub app',
    description: "Coolify's private-github-app create. berth does not call GitHub's API, so this answers 501 saying so; use create_private_deploy_key_application with a deploy key instead.",
  },
  list_github_apps: { title: 'List GitHub apps', description: "The team's GitHub app records (Coolify's fields); client and webhook secrets only with read:sensitive." },
  create_github_app: {
    title: 'Store a GitHub app',
    description: 'Store a GitHub app record (name, html_url, app_id, installation_id, client_id, client_secret, private_key_uuid of a team key). Kept for clients; berth does not call GitHub with it.',
  },
  update_github_app: { title: 'Update a GitHub app', description: 'Change fields of a GitHub app record by its numeric id (github_app_id).' },
  delete_github_app: { title: 'Delete a GitHub app', description: 'Delete a GitHub app record by its numeric id.' },
  list_github_app_repositories: { title: "List a GitHub app's repositories", description: "Needs GitHub's network and an installation token, which berth does not fetch: answers 501 saying so." },
  list_github_app_branches: { title: 'List branches through a GitHub app', description: "Needs GitHub's network and an installation token, which berth does not fetch: answers 501 saying so." },
  list_cloud_tokens: { title: 'List cloud provider tokens', description: "The team's cloud provider tokens (hetzner, digitalocean, vultr): names and providers, never the values." },
  create_cloud_token: {
    title: 'Store a cloud provider token',
    description: "Store a cloud provider's API token for clients that read it. Not validated: berth does not call the provider. The value is shown only to read:sensitive.",
  },
  get_cloud_token: { title: 'Get a cloud provider token', description: 'One cloud provider token; its value only with read:sensitive.' },
  update_cloud_token: { title: 'Rename a cloud provider token', description: 'Change the name of a cloud provider token (the value cannot be changed; store a new one).' },
  delete_cloud_token: { title: 'Delete a cloud provider token', description: 'Delete a cloud provider token from the team.' },
  validate_cloud_token: { title: 'Validate a cloud provider token', description: "Needs the provider's API over the network, which berth does not call: answers 501 saying so." },
  list_application_rollback_images: {
    title: 'List rollback images',
    description:
      "The images of an application its server's engine still holds (one per earlier build, up to docker_images_to_keep besides the running one), newest first, with the running one marked. Pass a tag to rollback_application.",
  },
  rollback_application: {
    title: 'Roll an application back',
    description: 'Queue a deployment that runs a kept image again (commit: a tag from list_application_rollback_images) without building. Follow it with get_deployment.',
  },
  get_application: { title: 'Get an application', description: 'Get an application: image, ports, domains, status (as its engine says) and where it lives.' },
  update_application: {
    title: 'Update an application',
    description:
      "Change an application (image, ports, domains, name, Coolify's health_check_*, limits_*, custom_labels, custom_docker_run_options). Call deploy afterwards for the running container to pick it up.",
  },
  delete_application: { title: 'Delete an application', description: 'Delete an application: its container on the server, its volumes (unless delete_volumes is false), then its records.' },
  list_databases: { title: 'List databases', description: "List the team's databases. Passwords and connection URLs are included only with read:sensitive." },
  get_database: { title: 'Get a database', description: 'Get a database. Passwords and internal_db_url need read:sensitive.' },
  update_database: { title: 'Update a database', description: "Change a database (name, image, credentials of its own type, Coolify's limits_*). Restart it for the change to apply." },
  delete_database: { title: 'Delete a database', description: 'Delete a database: its container, its volumes and backups (unless delete_volumes is false), then its records.' },
  list_services: { title: 'List services', description: "List the team's services (docker compose stacks) with their containers and volumes." },
  create_service: {
    title: 'Create a service from compose',
    description:
      'Create a service from a docker compose file (docker_compose_raw, base64 as Coolify expects, or plain YAML). Named volumes only: settings that reach into the host (privileged, host binds, cap_add, host namespaces) need host_access on the server. Nothing runs until you deploy.',
  },
  get_service: { title: 'Get a service', description: 'Get a service with its containers and volumes. The compose file itself needs read:sensitive.' },
  update_service: { title: 'Update a service', description: 'Change a service or replace its compose file (same rules as create). Redeploy to apply.' },
  delete_service: { title: 'Delete a service', description: 'Delete a service: its containers, its volumes (unless delete_volumes is false), then its records.' },
  deploy: {
    title: 'Deploy resources',
    description: 'Deploy the resources named by uuid (comma-separated) or tag. Follow the returned deployment uuids with get_deployment.',
  },
  list_audit_entries: {
    title: "List the team's audit log",
    description:
      'Who changed what in this team, newest first: every call that changed something or tried to (from REST, MCP, the CLI), with the token or OAuth client, source address, operation, target uuids, arguments (secrets shown as [redacted]), result, duration and the deployment or migration it started. Filter by from/to (ISO-8601), user (id or e-mail), token (id), operation, resource (uuid), result (ok, error, forbidden, not_found...).',
  },
  list_deployments: { title: 'List running deployments', description: "List the team's deployments that are queued or in progress." },
  get_deployment: { title: 'Get a deployment', description: 'A deployment\'s status and, with read:sensitive, its logs (full: "true" for all).' },
  cancel_deployment: { title: 'Cancel a deployment', description: 'Cancel a queued or running deployment. Finished ones cannot be cancelled.' },
  list_application_deployments: { title: 'List deployments of an application', description: "An application's deployment history, newest first." },
  list_migrations: { title: 'List migrations', description: "The team's migrations, newest first, with their volume transfer status." },
  get_migration: { title: 'Get a migration', description: 'Follow a migration (migrate_*): status, phase (pre-copy round N, final-sync, verify, switch), bytes sent, downtime_ms once done.' },
  cancel_migration: {
    title: 'Cancel a migration',
    description: 'Cancel a migration before its switch: the copy stops, the copies on the target are removed, and the resource stays (running if it ran) where it was.',
  },

  get_environment: { title: 'Get an environment', description: 'Get one environment of a project by its name or uuid, with the applications, databases and services it holds.' },
  update_environment: {
    title: 'Update an environment',
    description: 'Rename an environment of a project (found by name or uuid) or change its description. Another environment of the project with the new name is a conflict.',
  },
  delete_environment: {
    title: 'Delete an environment',
    description: 'Delete an environment of a project (found by name or uuid) together with its shared variables. Refused while it holds resources: delete or move them first.',
  },

  list_service_applications: {
    title: 'List service applications',
    description: 'List the application containers of a compose service (containers whose image is not a database image), each with a uuid that stays while its compose service name stays.',
  },
  list_service_databases: {
    title: 'List service databases',
    description:
      'List the database containers of a compose service (postgres, mysql, mariadb, mongo, redis, keydb, dragonfly, clickhouse and similar images), each with a uuid that stays while its compose service name stays.',
  },

  list_database_backups: {
    title: 'List database backups',
    description: 'The scheduled backups of a database (uuid from list_databases), each with its settings (frequency, enabled, retention) and its executions, newest first.',
  },
  create_database_backup: {
    title: 'Schedule database backups',
    description:
      'Schedule backups of a database: frequency is a 5-field cron expression or every_minute, hourly, daily, weekly, monthly, yearly (UTC). Files stay on the database’s server. Retention: database_backup_retention_amount_locally (keep N), _days_locally, _max_storage_locally (GB); 0 keeps all. backup_now: true also runs one now; follow it with list_database_backup_executions.',
  },
  update_database_backup: { title: 'Change a database backup', description: 'Change a scheduled backup: frequency, enabled (false pauses it), retention. backup_now: true runs one now.' },
  delete_database_backup: { title: 'Delete a database backup', description: 'Delete a scheduled backup, all its executions and their files on the server. Cannot be undone.' },
  list_database_backup_executions: {
    title: 'List backup executions',
    description: 'The runs of a scheduled backup, newest first: status (running, success, failed), filename, size in bytes, message; the dump tool’s logs need read:sensitive.',
  },
  delete_database_backup_execution: { title: 'Delete a backup execution', description: 'Delete one backup run and its file on the server.' },
  restore_database_backup_execution: {
    title: 'Restore a database backup',
    description:
      'Load a successful backup run back into its running database (PostgreSQL, MySQL, MariaDB, MongoDB): objects in the dump are dropped and recreated, so changes since the backup are lost. Waits until the restore ends.',
  },
};

const COLLECTION_WORDS: Record<string, string> = { application: 'an application', database: 'a database', service: 'a service' };

/** Texts for the per-collection families (envs, storages, logs, lifecycle, migrate, database creation). */
function familyText(name: string): ToolText | undefined {
  let m = /^(get|update)_(email|discord|slack|telegram|pushover|webhook)_notifications$/.exec(name);
  if (m) {
    const where = { email: 'e-mail', discord: 'Discord', slack: 'Slack', telegram: 'Telegram', pushover: 'Pushover', webhook: 'webhook' }[m[2] as 'email'];
    return m[1] === 'get'
      ? {
          title: `Get ${where} notifications`,
          description: `The team's ${where} notification settings: whether the channel is on, its target, and which events it sends (<event>_${m[2]}_notifications). Credentials and webhook URLs need read:sensitive.`,
        }
      : {
          title: `Set ${where} notifications`,
          description: `Change the team's ${where} notifications: switch the channel on with its target and pick events (deployment_success, deployment_failure, backup_*, scheduled_task_*, server_*). Targets on private or loopback addresses are refused unless the operator allowed them.`,
        };
  }
  m = /^clone_(application|database|service)$/.exec(name);
  if (m) {
    const what = COLLECTION_WORDS[m[1]!]!;
    return {
      title: `Clone ${what.replace(/^an? /, 'a ')}`,
      description: `Copy ${what} onto a destination (destination_uuid from list_destinations): settings, variables, volumes (new and empty) and tags, in the same environment; name optional. The copy is not deployed.`,
    };
  }
  m = /^move_(application|database|service)$/.exec(name);
  if (m) {
    const what = COLLECTION_WORDS[m[1]!]!;
    return {
      title: `Move ${what.replace(/^an? /, 'a ')} to an environment`,
      description: `Move ${what} to another environment (environment_uuid, from list_environments of any of your projects). Records only: its server, containers and data stay; not to be confused with migrate, which changes servers.`,
    };
  }
  m = /^(list|add|remove)_(application|database|service)_tags?$/.exec(name);
  if (m) {
    const what = COLLECTION_WORDS[m[2]!]!;
    return {
      list: { title: `List ${m[2]} tags`, description: `The tags ${what} carries (uuid and name of each).` },
      add: { title: `Tag ${what.replace(/^an? /, 'a ')}`, description: `Add tags to ${what}: tag_name, or tag_names for several; new names become tags. Answers all its tags.` },
      remove: { title: `Untag ${what.replace(/^an? /, 'a ')}`, description: `Take one tag (tag_uuid from list_tags) off ${what}. A tag nothing carries any more is deleted.` },
    }[m[1] as 'list'];
  }
  m = /^(get|update|start|stop|restart)_service_(application|database)(_logs)?$/.exec(name);
  if (m) {
    const what = `one ${m[2]} of a service (a compose container, from list_service_${m[2]}s)`;
    if (m[3]) return m[1] === 'get' ? { title: `Get service ${m[2]} logs`, description: `The last lines (default 100) of the logs of ${what}; read:sensitive.` } : undefined;
    return {
      get: { title: `Get a service ${m[2]}`, description: `Get ${what}: its name, human_name, description and image.` },
      update: { title: `Describe a service ${m[2]}`, description: `Set the human_name or description of ${what}.` },
      start: { title: `Start a service ${m[2]}`, description: `Start ${what} alone; the service's other containers are left as they are.` },
      stop: { title: `Stop a service ${m[2]}`, description: `Stop ${what} alone; the service's other containers keep running.` },
      restart: { title: `Restart a service ${m[2]}`, description: `Restart ${what} alone; the service's other containers keep running.` },
    }[m[1] as 'get'];
  }
  m = /^(get|update|delete|run)_(application|database|service)_storage_backup$/.exec(name);
  if (m) {
    const what = COLLECTION_WORDS[m[2]!]!;
    return {
      get: {
        title: `Get a ${m[2]} volume backup`,
        description: `The backup schedule of a volume of ${what} (storage_uuid) and its latest runs: status, archive file, size; the tool output needs read:sensitive.`,
      },
      update: {
        title: `Schedule a ${m[2]} volume backup`,
        description: `Create or change the backup schedule of a volume of ${what}: frequency (cron, UTC, or hourly/daily/...), retention_amount_locally, stop_during_backup. Archives (tar.gz) stay in the server's backup volume; S3 is not supported yet.`,
      },
      delete: { title: `Remove a ${m[2]} volume backup`, description: `Remove the backup schedule of a volume of ${what}. Archives already made stay on the server.` },
      run: { title: `Back up a ${m[2]} volume now`, description: `Archive a volume of ${what} now (it needs a schedule). Follow it with get_${m[2]}_storage_backup.` },
    }[m[1] as 'get']!;
  }
  m = /^(list|create|update|delete|execute)_(application|service)_scheduled_tasks?(_executions)?$/.exec(name);
  if (m) {
    const what = COLLECTION_WORDS[m[2]!]!;
    const where = m[2] === 'service' ? "one of the service's containers (container: its compose service name; may be left empty when it has one)" : "the application's container";
    if (m[3])
      return m[1] === 'list'
        ? {
            title: `List ${m[2]} task runs`,
            description: `The runs of a scheduled task of ${what} (task_uuid), latest first: status, message, exit_code, duration; the output (logs) needs read:sensitive and keeps its tail unless full is "true".`,
          }
        : undefined;
    return {
      list: { title: `List ${m[2]} scheduled tasks`, description: `List the scheduled tasks of ${what}: name, frequency, container, timeout, enabled; the command needs read:sensitive.` },
      create: {
        title: `Schedule a ${m[2]} task`,
        description: `Schedule a shell command (sh -c) inside ${where}: name, command, frequency (cron, UTC, or every_minute/hourly/daily/...), timeout seconds (default 300; killed after), enabled. It runs only while the container runs.`,
      },
      update: { title: `Change a ${m[2]} scheduled task`, description: `Change a scheduled task of ${what} (task_uuid): name, command, frequency, container, timeout, enabled.` },
      delete: { title: `Delete a ${m[2]} scheduled task`, description: `Delete a scheduled task of ${what} (task_uuid) and its recorded runs.` },
      execute: { title: `Run a ${m[2]} task now`, description: `Run a scheduled task of ${what} once now, in the background; follow it with list_${m[2]}_scheduled_task_executions (execution_uuid).` },
    }[m[1] as 'list'];
  }
  const v = /^(list|create|update|delete)_(team|project|environment|server)_shared_envs?$/.exec(name);
  if (v) {
    const scope = v[2]!;
    const where = { team: 'your team', project: 'a project (uuid)', environment: 'a project environment (uuid + environment_name_or_uuid)', server: 'a server (uuid)' }[scope]!;
    return {
      list: {
        title: `List ${scope} shared variables`,
        description: `List the shared environment variables of ${where}. Values need read:sensitive (never shown for is_shown_once). Resources use them as {{${scope}.KEY}} in their own variables.`,
      },
      create: {
        title: `Add a ${scope} shared variable`,
        description: `Add a shared environment variable (key, value) to ${where}; returns its id. A resource variable whose value holds {{${scope}.KEY}} gets it at its next deploy.`,
      },
      update: { title: `Change a ${scope} shared variable`, description: `Change a shared variable of ${where} by its id (env_id): key, value, flags or comment. Redeploy the resources that use it.` },
      delete: {
        title: `Delete a ${scope} shared variable`,
        description: `Delete a shared variable of ${where} by its id (env_id). References to it are left as written at the next deploy (and logged).`,
      },
    }[v[1] as 'list']!;
  }
  m = /^update_(application|database|service)_envs_bulk$/.exec(name);
  if (m) {
    return {
      title: `Set ${m[1]} variables in bulk`,
      description: `Create or change several environment variables of ${COLLECTION_WORDS[m[1]!]} at once (data: [{ key, value, ... }]); all or none. Redeploy or restart to apply.`,
    };
  }
  m = /^(list|create|update|delete)_(application|database|service)_envs?$/.exec(name);
  if (m) {
    const what = COLLECTION_WORDS[m[2]!]!;
    return {
      list: { title: `List ${m[2]} variables`, description: `List the environment variables of ${what}. Values are shown only with read:sensitive (never for is_shown_once variables).` },
      create: { title: `Add a ${m[2]} variable`, description: `Add an environment variable (key, value) to ${what}. Redeploy or restart for it to reach the container.` },
      update: { title: `Change a ${m[2]} variable`, description: `Change the environment variable of ${what} that has the given key. Redeploy or restart to apply.` },
      delete: { title: `Delete a ${m[2]} variable`, description: `Delete an environment variable of ${what} by its uuid (env_uuid).` },
    }[m[1] as 'list']!;
  }
  m = /^update_(application|database)_storage$/.exec(name);
  if (m) {
    return {
      title: `Move a ${m[1]} volume`,
      description: `Mount a persistent volume of ${COLLECTION_WORDS[m[1]!]} (storage_uuid) at another mount_path; its data and engine volume stay. Redeploy to apply.`,
    };
  }
  m = /^(list|create|delete)_(application|database|service)_storages?$/.exec(name);
  if (m) {
    const what = COLLECTION_WORDS[m[2]!]!;
    return {
      list: { title: `List ${m[2]} volumes`, description: `List the persistent volumes of ${what}: name, mount path, and the engine volume that holds the data (what a migration copies).` },
      create: { title: `Add a ${m[2]} volume`, description: `Add a persistent named volume to ${what} at mount_path (absolute, no ".."). Redeploy to mount it.` },
      delete: { title: `Remove a ${m[2]} volume`, description: `Remove a persistent volume from ${what}'s records. The data on the engine is not deleted.` },
    }[m[1] as 'list']!;
  }
  m = /^get_(application|database|service)_logs$/.exec(name);
  if (m)
    return {
      title: `Get ${m[1]} logs`,
      description: `The last lines (default 100) of ${COLLECTION_WORDS[m[1]!]}'s container logs (read:sensitive)${m[1] === 'service' ? '; sub_service_name: one container' : ''}; show_timestamps: true adds times; long logs keep their tail unless full: "true".`,
    };
  m = /^(start|stop|restart)_(application|database|service)$/.exec(name);
  if (m) {
    const what = COLLECTION_WORDS[m[2]!]!;
    const effect = { start: 'Start', stop: 'Stop', restart: 'Restart' }[m[1] as 'start'];
    return {
      title: `${effect} ${what.replace(/^an? /, '')}`,
      description: `${effect} ${what}${m[1] === 'restart' && m[2] === 'service' ? ' (latest: true pulls its images first)' : ''}; waits for the engine, answers its status.`,
    };
  }
  m = /^migrate_(application|database|service)$/.exec(name);
  if (m) {
    const what = COLLECTION_WORDS[m[1]!]!;
    return {
      title: `Migrate ${what.replace(/^an? /, '')}`,
      description: `Move ${what} with its volume data to a destination (list_destinations); stopped only for the last pass. start_on_destination starts it there; wait waits (else get_migration).`,
    };
  }
  m = /^create_(postgresql|mysql|mariadb|redis|mongodb|clickhouse|dragonfly|keydb)_database$/.exec(name);
  if (m) {
    return {
      title: `Create a ${m[1]} database`,
      description: `Create a ${m[1]} database with a persistent data volume on a server, in a project environment (project_uuid, server_uuid, environment_name). Passwords are generated unless given; limits_* as Coolify. Nothing runs until you deploy or start it.`,
    };
  }
  return undefined;
}

/** The agent-facing text of every tool; undefined means the operation still needs one. */
export function toolText(name: string): ToolText | undefined {
  return explicit[name] ?? familyText(name);
}
