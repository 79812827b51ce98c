/** podman without systemd never runs health checks by itself (Docker does): berth runs them there. */
export const berthRunsHealthchecks = (v: { Components?: { Name: string }[] }): boolean => (v.Components ?? []).some((c) => /podman/i.test(c.Name));
