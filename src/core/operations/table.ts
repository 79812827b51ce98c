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

/** The table; read before operations/index.ts registered it, a bug that would hide nothing, so it throws. */
export const operationTable = (): readonly Operation[] => {
  if (!table.length) throw new Error('The operation table is read before operations/index.ts registered it.');
  return table;
};
export const operationNames = (): ReadonlySet<string> => names;
