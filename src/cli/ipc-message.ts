/** The messages the cluster's primary and workers exchange over IPC: objects told apart by their `type`. */

/** Whether an IPC `message` is one of type `type`. */
export const isMessage = <T extends { type: string }>(message: unknown, type: T['type']): message is T =>
  typeof message === 'object' && message !== null && (message as { type?: unknown }).type === type
