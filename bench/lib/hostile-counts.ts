/** What the soak's hostile client (soak-hostile.ts) did, as it reports it over IPC. */
export function hostileCounts() {
  return {
    polls: 0,
    restNacks: 0,
    forgedNacks: 0,
    errors: 0,
    unauthenticatedRegistrations: 0,
    registrations: 0,
    partialMessages: 0,
    gzipBombs: 0,
  };
}

export type HostileCounts = ReturnType<typeof hostileCounts>;
