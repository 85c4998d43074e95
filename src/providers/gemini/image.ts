/**
 * `modalities` and `image_config` → Gemini's `responseModalities` and `imageConfig`
 * (https://ai.google.dev/gemini-api/docs/image-generation):
 *
 * - `modalities` → `responseModalities` (`text` → `TEXT`, `image` → `IMAGE`), in the caller's order. Without
 *   it nothing is sent, and an image model answers with text and images as it does by default.
 * - `image_config`: OpenRouter's keys for Gemini, `aspect_ratio` → `aspectRatio` and `image_size` →
 *   `imageSize`, each a string passed as is (Gemini checks the value). Any other key is a 400 naming it: Gemini
 *   has nothing it could mean, and dropping it would hide that.
 */

import { InvalidRequestError } from '../../core/errors'
import type { ResponsesRequest } from '../types'
import type { GeminiGenerationConfig, GeminiImageConfig } from './wire'

const MODALITIES = { text: 'TEXT', image: 'IMAGE' } as const

const IMAGE_CONFIG_KEYS: Readonly<Record<string, keyof GeminiImageConfig>> = { aspect_ratio: 'aspectRatio', image_size: 'imageSize' }

const imageConfig = (config: NonNullable<ResponsesRequest['image_config']>): GeminiImageConfig => {
  const mapped: GeminiImageConfig = {}
  for (const [key, value] of Object.entries(config)) {
    const name = Object.hasOwn(IMAGE_CONFIG_KEYS, key) ? IMAGE_CONFIG_KEYS[key] : undefined
    if (!name) {
      throw new InvalidRequestError(`image_config.${key}: not supported by Gemini (it takes ${Object.keys(IMAGE_CONFIG_KEYS).join(' and ')})`)
    }
    if (typeof value !== 'string') throw new InvalidRequestError(`image_config.${key}: must be a string for Gemini`)
    mapped[name] = value
  }
  return mapped
}

/** Sets the image output fields of `config` the request asks for. */
export const applyImageOutput = (request: ResponsesRequest, config: GeminiGenerationConfig) => {
  if (request.modalities && request.modalities.length > 0) config.responseModalities = request.modalities.map((modality) => MODALITIES[modality])
  if (request.image_config) {
    const mapped = imageConfig(request.image_config)
    if (Object.keys(mapped).length > 0) config.imageConfig = mapped
  }
}
