import type { Db } from '../store/db.js';

/** One app a person let act for them (an OAuth grant), as the console lists it. */
export interface AppGrant {
  id: string;
  clientName: string;
  /** Host of the redirect URI, so two clients with one name can be told apart. */
  redirectHost: string;
  teamName: string;
  permissions: string[];
  createdAt: string;
  lastUsedAt: string | null;
}

/**
 * The hook the OAuth authorization server fills: list a person's grants and revoke one (the
 * client is refused at its next request). Until it is mounted, nobody has connected apps.
 */
export interface ConnectedApps {
  list(db: Db, userId: number): Promise<AppGrant[]>;
  /** false when the grant is not this person's (or does not exist): the page answers 404. */
  revoke(db: Db, userId: number, grantId: string): Promise<boolean>;
}

export const NO_CONNECTED_APPS: ConnectedApps = {
  list: async () => [],
  revoke: async () => false,
};
