/** The engine volume for a storage: unique per resource, as Coolify's `<uuid>-<name>`. */
export const volumeName = (resourceUuid: string, storageName: string) => `${resourceUuid}-${storageName}`;
