import type { Operation } from '../operation.js';
import { applicationOperations } from './applications.js';
import { databaseOperations } from './databases.js';
import { backupOperations } from './backups.js';
import { deploymentOperations, lifecycleOperations } from './deployments.js';
import { feedbackOperations } from './feedback.js';
import { notificationOperations } from './notifications.js';
import { dockerCleanupOperations } from './docker-cleanup.js';
import { logDrainOperations } from './log-drains.js';
import { s3StorageOperations } from './s3-storages.js';
import { cloudInitScriptOperations } from './cloud-init-scripts.js';
import { volumeBackupOperations } from './volume-backups.js';
import { scheduledTaskOperations } from './scheduled-tasks.js';
import { applicationBuildOperations } from './application-builds.js';
import { applicationDestinationOperations } from './application-destinations.js';
import { applicationPreviewOperations } from './application-previews.js';
import { resourceTagOperations, tagOperations } from './tags.js';
import { moveOperation } from './move.js';
import { cloneOperation } from './clone.js';
import { keyOperations } from './private-keys.js';
import { rollbackOperations } from './rollback.js';
import { cloudTokenOperations, githubAppOperations } from './git-sources.js';
import { gitlabAppOperations } from './gitlab-apps.js';
import { migrateOperation, migrationOperations } from './migrate.js';
import { platformOperations } from './platform.js';
import { projectOperations } from './projects.js';
import { envOperations, logOperation, storageOperations } from './resource-parts.js';
import type { Collection } from '../model/kinds.js';
import { destinationOperations, serverOperations } from './servers.js';
import { serverTransferOperations } from './server-transfer.js';
import { cloudProviderOperations } from './cloud-providers.js';
import { serverProxyOperations } from './server-proxy.js';
import { serviceOperations } from './services.js';
import { serviceTemplateOperations } from './service-templates.js';
import { servicePartOperations } from './service-parts.js';
import { settingsOperations } from './instance-settings.js';
import { serviceStorageOperations } from './service-storages.js';
import { environmentOperations, sharedVariableOperations } from './shared-variables.js';
import { teamOperations } from './teams.js';
import { approvalOperations } from './approvals.js';
import { registerOperationTable } from './table.js';
import { auditOperations } from './audit.js';

/** What every application, database and service offers beyond its own CRUD. */
const resourceFamily = (c: Collection) => [
  ...envOperations(c),
  ...storageOperations(c),
  ...volumeBackupOperations(c),
  ...resourceTagOperations(c),
  moveOperation(c),
  cloneOperation(c),
  logOperation(c),
  ...lifecycleOperations(c),
  migrateOperation(c),
];

/** The operation table: every door is built from this list. */
export const operations: readonly Operation[] = [
  ...settingsOperations,
  ...teamOperations,
  ...platformOperations,
  ...keyOperations,
  ...gitlabAppOperations,
  ...serverOperations,
  ...serverTransferOperations,
  ...cloudProviderOperations,
  ...serverProxyOperations,
  ...destinationOperations,
  ...dockerCleanupOperations,
  ...logDrainOperations,
  ...cloudInitScriptOperations,
  ...cloudTokenOperations,
  ...projectOperations,
  ...applicationOperations,
  ...applicationBuildOperations,
  ...applicationDestinationOperations,
  ...applicationPreviewOperations,
  ...githubAppOperations,
  ...resourceFamily('applications'),
  ...scheduledTaskOperations('applications'),
  ...databaseOperations,
  ...resourceFamily('databases'),
  ...serviceOperations,
  ...serviceTemplateOperations,
  ...resourceFamily('services'),
  ...scheduledTaskOperations('services'),
  ...serviceStorageOperations,
  ...deploymentOperations,
  ...rollbackOperations,
  ...migrationOperations,
  ...feedbackOperations,
  ...tagOperations,
  ...notificationOperations,
  ...s3StorageOperations,
  ...sharedVariableOperations,
  ...environmentOperations,
  ...servicePartOperations,
  ...auditOperations,
  ...backupOperations,
  ...approvalOperations,
] as unknown as readonly Operation[];
registerOperationTable(operations);
