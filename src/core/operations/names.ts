/**
 * The names of the operation table, set once by operations/index.ts: the approval policy checks a
 * rule against them without importing the table it is itself part of.
 */
let names: ReadonlySet<string> = new Set();

export const registerOperationNames = (list: Iterable<string>): void => {
  names = new Set(list);
};

export const operationNames = (): ReadonlySet<string> => names;
