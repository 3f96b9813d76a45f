/**
 * A proxy's state as the fleet view counts it, worst first. Its own module, with no imports, so
 * that the server's fleet view and the page's script share it.
 */
export const NODE_STATES = ['nacked', 'behind', 'in-sync'] as const;
export type NodeState = (typeof NODE_STATES)[number];
