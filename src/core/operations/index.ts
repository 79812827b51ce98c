import type { Operation } from '../operation.js';
import { feedbackOperations } from './feedback.js';
import { settingsOperations } from './settings.js';
import { teamOperations } from './teams.js';

/** The operation table: every door is built from this list. */
export const operations: readonly Operation[] = [
  ...settingsOperations,
  ...teamOperations,
  ...feedbackOperations,
] as unknown as readonly Operation[];

export const operationsByName: ReadonlyMap<string, Operation> = new Map(operations.map((o) => [o.name, o]));
