/**
 * The slice of the Gemini `generateContent` wire format we send and read
 * (https://ai.google.dev/api/generate-content). Response shapes are loose on purpose: every field
 * is optional, so a new or missing upstream field never breaks us.
 */

/** `format` of the reasoning items that carry Gemini thought signatures (docs/decisions.md, POST /responses). */
export const GEMINI_REASONING_FORMAT = 'google-gemini-v1'

/** One content part, as we send it. */
export type GeminiPart =
  | { text: string; thought?: boolean; thoughtSignature?: string }
  | { inlineData: { mimeType: string; data: string } }
  | { fileData: { mimeType?: string; fileUri: string } }
  | { functionCall: { id?: string; name: string; args: Record<string, unknown> }; thoughtSignature?: string }
  | { functionResponse: { id?: string; name: string; response: Record<string, unknown> } }

export interface GeminiContent {
  role: 'user' | 'model'
  parts: GeminiPart[]
}

export interface GeminiFunctionDeclaration {
  name: string
  description?: string
  /** Full JSON Schema (the API's successor to the OpenAPI-subset `parameters`). */
  parametersJsonSchema?: Record<string, unknown>
}

export interface GeminiThinkingConfig {
  includeThoughts?: boolean
  thinkingBudget?: number
  thinkingLevel?: 'minimal' | 'low' | 'medium' | 'high'
}

/** `generationConfig.imageConfig`: how an image model draws (https://ai.google.dev/gemini-api/docs/image-generation). */
export interface GeminiImageConfig {
  aspectRatio?: string
  imageSize?: string
}

export interface GeminiGenerationConfig {
  temperature?: number
  topP?: number
  topK?: number
  maxOutputTokens?: number
  presencePenalty?: number
  frequencyPenalty?: number
  stopSequences?: string[]
  seed?: number
  responseMimeType?: string
  responseJsonSchema?: Record<string, unknown>
  thinkingConfig?: GeminiThinkingConfig
  responseModalities?: Array<'TEXT' | 'IMAGE'>
  imageConfig?: GeminiImageConfig
}

export interface GeminiRequestBody {
  systemInstruction?: { parts: Array<{ text: string }> }
  contents: GeminiContent[]
  tools?: Array<{ functionDeclarations: GeminiFunctionDeclaration[] } | { google_search: Record<string, never> }>
  toolConfig?: { functionCallingConfig: { mode: 'AUTO' | 'ANY' | 'NONE'; allowedFunctionNames?: string[] } }
  generationConfig?: GeminiGenerationConfig
}

/** A response part, as the upstream may send it. */
export interface GeminiResponsePart {
  text?: string
  thought?: boolean
  thoughtSignature?: string
  functionCall?: { id?: string; name?: string; args?: Record<string, unknown> | null }
  /** Generated media (an image model's picture), base64. */
  inlineData?: { mimeType?: string; data?: string }
  [key: string]: unknown
}

/** What grounding with Google Search found for a candidate (grounding.ts). */
export interface GeminiGroundingMetadata {
  webSearchQueries?: unknown[]
  groundingChunks?: Array<{ web?: { uri?: unknown; title?: unknown } } | null>
  groundingSupports?: Array<{ segment?: { text?: unknown }; groundingChunkIndices?: unknown[] } | null>
  [key: string]: unknown
}

export interface GeminiCandidate {
  content?: { parts?: GeminiResponsePart[]; role?: string }
  groundingMetadata?: GeminiGroundingMetadata
  finishReason?: string
  finishMessage?: string
  index?: number
}

export interface GeminiUsageMetadata {
  promptTokenCount?: number
  candidatesTokenCount?: number
  /** `candidatesTokenCount` by modality (`TEXT`, `IMAGE`…). */
  candidatesTokensDetails?: Array<{ modality?: string; tokenCount?: number }>
  cachedContentTokenCount?: number
  toolUsePromptTokenCount?: number
  thoughtsTokenCount?: number
  totalTokenCount?: number
}

/** Google's error envelope (`google.rpc.Status` as JSON). */
export interface GeminiErrorObject {
  code?: number
  message?: string
  status?: string
  details?: Array<{ '@type'?: string; reason?: string; retryDelay?: string; [key: string]: unknown }>
}

/** One `GenerateContentResponse`: a whole non-streaming body, or one SSE chunk. */
export interface GeminiResponse {
  candidates?: GeminiCandidate[]
  promptFeedback?: { blockReason?: string; blockReasonMessage?: string }
  usageMetadata?: GeminiUsageMetadata
  modelVersion?: string
  responseId?: string
  /** Present instead of the fields above when a stream fails in-band. */
  error?: GeminiErrorObject
}
