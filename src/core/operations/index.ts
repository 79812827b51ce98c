import type { Operation } from '../operation.js';
import { applicationOperations } from './applications.js';
import { databaseOperations } from './databases.js';
import { deploymentOperations, lifecycleOperations } from './deployments.js';
import { feedbackOperations } from './feedback.js';
import { keyOperations } from './keys.js';
import { migrateOperation, migrationOperations } from './migrate.js';
import { platformOperations } from './platform.js';
import { projectOperations } from './projects.js';
import { envOperations, logOperation, storageOperations } from './resource-parts.js';
import type { Collection } from './resource-common.js';
import { destinationOperations, serverOperations } from './servers.js';
import { serviceOperations } from './services.js';
import { servicePartOperations } from './service-parts.js';
import { settingsOperations } from './settings.js';
import { teamOperations } from './teams.js';

/** What every application, database and service offers beyond its own CRUD. */
const resourceFamily = (c: Collection) => [...envOperations(c), ...storageOperations(c), logOperation(c), ...lifecycleOperations(c), migrateOperation(c)];

/** The operation table: every door is built from this list. */
export const operations: readonly Operation[] = [
  ...settingsOperations,
  ...teamOperations,
  ...platformOperations,
  ...keyOperations,
  ...serverOperations,
  ...destinationOperations,
  ...projectOperations,
  ...applicationOperations,
  ...resourceFamily('applications'),
  ...databaseOperations,
  ...resourceFamily('databases'),
  ...serviceOperations,
  ...resourceFamily('services'),
  ...deploymentOperations,
  ...migrationOperations,
  ...feedbackOperations,

  // [tags]

  // [variables]

  // [services-parts]
  ...servicePartOperations,

  // [backups]

  // [builds]

  // [tasks]

] as unknown as readonly Operation[];

