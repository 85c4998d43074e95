/**
 * The picture a `service:image_generation` item holds (docs/decisions.md, "Server tools"), shown where each wire
 * shows generated images: Chat Completions `images`, a Messages `image` block. Its other fields have no place there.
 */

import type { OutputImage, OutputItem } from '../../providers/types'

/** The item as a generated image when it is a finished `service:image_generation` one; any other item as it is. */
export const asGeneratedImage = (item: OutputItem): OutputItem => {
  if (item.type !== 'service:image_generation' || item.status !== 'completed' || typeof item.result !== 'string') return item
  const image: OutputImage = { id: String(item.id), type: 'image_generation_call', status: 'completed', result: item.result }
  return typeof item.output_format === 'string' ? { ...image, output_format: item.output_format } : image
}
