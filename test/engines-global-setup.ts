/**
 * One pair of real engines for the whole run (vitest globalSetup), shared by the engine and
 * end-to-end files through BERTH_TEST_ENGINES_DIR: an `engines.sh up` and `down` per file took
 * ~14 s of a worker each on these machines (two dozen files). Files keep to their own resources
 * on the shared pair; the few that act on a whole engine still start their own (useEngines({ own })).
 */
export { setup, teardown } from './helpers/engines.js';
