import * as v from 'valibot'

export const WorkspaceParamsSchema = v.object({
  // spec GET /workspaces/{id}: the workspace UUID or slug, minimum length 1.
  id: v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(256, 'must be at most 256 characters')),
})
export type WorkspaceParams = v.InferOutput<typeof WorkspaceParamsSchema>
