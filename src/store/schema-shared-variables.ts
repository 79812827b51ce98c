import type { Generated } from 'kysely';

export type SharedScope = 'team' | 'project' | 'environment' | 'server';

/**
 * Coolify's shared variables (migration 009). `scope_id` is the id of the team, project,
 * environment or server row the variable belongs to; the matching `*_id` column holds it too, for
 * the cascade when that row is deleted.
 */
export interface SharedEnvironmentVariablesTable {
  id: Generated<number>;
  team_id: number;
  type: SharedScope;
  scope_id: number;
  project_id: number | null;
  environment_id: number | null;
  server_id: number | null;
  key: string;
  value: string | null;
  is_literal: number;
  is_multiline: number;
  is_shown_once: number;
  comment: string | null;
  created_at: string;
  updated_at: string;
}
