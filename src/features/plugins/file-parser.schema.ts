import * as v from 'valibot'

export const PDF_ENGINES = ['native', 'pdf-text', 'mistral-ocr', 'cloudflare-ai'] as const

/** OpenRouter's `FileParserPlugin` with its `PDFParserOptions`. */
export const FileParserPluginSchema = v.strictObject({
  id: v.literal('file-parser'),
  enabled: v.optional(v.boolean()),
  pdf: v.optional(v.strictObject({ engine: v.optional(v.picklist(PDF_ENGINES, `must be one of ${PDF_ENGINES.join(', ')}`)) })),
})

export type FileParserPluginSettings = v.InferOutput<typeof FileParserPluginSchema>
