/**
 * oidc-provider 9 prints "Unsupported runtime" on every Node that is not 22+ LTS, at import.
 * berth supports Node ^20.19 (package.json engines) and runs its OAuth tests there, so that one
 * line is not shown to people; every other warning of the library still is. Imported before the
 * library by every module that imports it.
 */
const warn = console.warn.bind(console);
console.warn = (...args: unknown[]) => {
  if (typeof args[0] === 'string' && args[0].startsWith('oidc-provider WARNING: Unsupported runtime')) return;
  warn(...args);
};
