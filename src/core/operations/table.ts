import type { Operation } from '../operation.js';

/**
 * The operation table, registered once by operations/index.ts: modules the table itself imports
 * (the approval policy's rule check, the audit entry's hidden names) read it without importing it.
 */
let table: readonly Operation[] = [];
let names: ReadonlySet<string> = new Set();

export const registerOperationTable = (ops: readonly Operation[]): void => {
  table = ops;
  names = new Set(ops.map((o) => o.name));
};

export const operationTable = (): readonly Operation[] => table;
export const operationNames = (): ReadonlySet<string> => names;
