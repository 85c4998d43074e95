/**
 * Images and files → Gemini `inlineData` (base64 bytes) or `fileData` (a URI Gemini fetches:
 * Files API URIs, YouTube links, public https URLs).
 *
 * MIME types come from the data URL header, else from the URL's or filename's extension. When
 * neither says: images are declared `image/jpeg` (Gemini reads the real format from the bytes; it
 * only needs an image type), inline files `application/pdf` (what `input_file` carries in practice),
 * and file URLs go without `mimeType`, which the API then takes from the Files API record or the
 * fetched resource.
 */

import { InvalidRequestError } from '../../core/errors'
import type { GeminiPart } from './wire'

const MIME_BY_EXTENSION: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  heic: 'image/heic',
  heif: 'image/heif',
  pdf: 'application/pdf',
  txt: 'text/plain',
  md: 'text/markdown',
  html: 'text/html',
  htm: 'text/html',
  csv: 'text/csv',
  xml: 'text/xml',
  json: 'application/json',
  mp3: 'audio/mp3',
  wav: 'audio/wav',
  ogg: 'audio/ogg',
  flac: 'audio/flac',
  aac: 'audio/aac',
  mp4: 'video/mp4',
  mpeg: 'video/mpeg',
  mov: 'video/mov',
  webm: 'video/webm',
}

const FALLBACK_IMAGE_MIME = 'image/jpeg'
const FALLBACK_FILE_MIME = 'application/pdf'

/** The extension of a path, URL or filename (`a/b.PNG?x=1` → `png`), or undefined. */
const extensionOf = (value: string): string | undefined => {
  let end = value.length
  const query = value.indexOf('?')
  if (query >= 0) end = query
  const hash = value.indexOf('#')
  if (hash >= 0 && hash < end) end = hash
  const path = value.slice(0, end)
  const dot = path.lastIndexOf('.')
  if (dot < 0 || dot < path.lastIndexOf('/')) return undefined
  return path.slice(dot + 1).toLowerCase()
}

export const mimeFromName = (name: string | undefined): string | undefined =>
  name === undefined ? undefined : MIME_BY_EXTENSION[extensionOf(name) ?? '']

/** Splits a base64 data URL without a regex over its (possibly megabytes of) payload. */
const dataUrlPart = (url: string, path: string, fallbackMime: string): GeminiPart => {
  const comma = url.indexOf(',')
  const header = comma < 0 ? '' : url.slice(5, comma)
  if (comma < 0 || !header.endsWith(';base64')) throw new InvalidRequestError(`${path}: only base64 data URLs are supported by Gemini`)
  const semicolon = header.indexOf(';')
  const mimeType = header.slice(0, semicolon).trim().toLowerCase() || fallbackMime
  return { inlineData: { mimeType, data: url.slice(comma + 1) } }
}

/** `input_image.image_url`: a data URL or a URL. */
export const imagePart = (url: string, path: string): GeminiPart => {
  if (url.startsWith('data:')) return dataUrlPart(url, path, FALLBACK_IMAGE_MIME)
  return { fileData: { mimeType: mimeFromName(url) ?? FALLBACK_IMAGE_MIME, fileUri: url } }
}

/** `input_file.file_data`: a data URL, or bare base64 typed by `filename`. */
export const fileDataPart = (fileData: string, filename: string | undefined, path: string): GeminiPart => {
  const fallback = mimeFromName(filename) ?? FALLBACK_FILE_MIME
  if (fileData.startsWith('data:')) return dataUrlPart(fileData, path, fallback)
  return { inlineData: { mimeType: fallback, data: fileData } }
}

/** `input_file.file_url`. */
export const fileUrlPart = (url: string, filename: string | undefined): GeminiPart => {
  const mimeType = mimeFromName(url) ?? mimeFromName(filename)
  return { fileData: { ...(mimeType ? { mimeType } : {}), fileUri: url } }
}
