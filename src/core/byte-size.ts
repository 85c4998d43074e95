/** A byte count as people read it in messages: `32 MiB`, `64 KiB`, or `1500 bytes` when not a round size. */
export const formatByteSize = (bytes: number): string => {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`
  return `${bytes} bytes`
}
