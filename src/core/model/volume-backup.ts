/** A volume backup schedule's settings, as Coolify names them. */
export interface VolumeBackupSettings {
  frequency: string;
  enabled: boolean;
  save_s3: boolean;
  disable_local_backup: boolean;
  stop_during_backup: boolean;
  s3_storage_uuid: string | null;
  retention_amount_locally: number;
  retention_days_locally: number;
  retention_max_storage_locally: number;
  retention_amount_s3: number;
  retention_days_s3: number;
  retention_max_storage_s3: number;
  timeout: number;
}

export const VOLUME_BACKUP_DEFAULTS: Omit<VolumeBackupSettings, 'frequency'> = {
  enabled: true,
  save_s3: false,
  disable_local_backup: false,
  stop_during_backup: false,
  s3_storage_uuid: null,
  retention_amount_locally: 7,
  retention_days_locally: 0,
  retention_max_storage_locally: 0,
  retention_amount_s3: 7,
  retention_days_s3: 0,
  retention_max_storage_s3: 0,
  timeout: 3600,
};
