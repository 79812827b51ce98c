/** What a deployment does to its resource: build/pull and run, or one lifecycle step. */
export type DeploymentKind = 'deploy' | 'start' | 'stop' | 'restart';
