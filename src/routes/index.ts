import type { AnyRoute } from '../pipeline/route'
import { listAuditLog } from './audit-log'
import { createByok, deleteByok, getByok, listByok, updateByok } from './byok'
import { createKey, deleteKey, getKey, listKeys, updateKey } from './keys'
import { getCurrentKey } from './current-key'
import { getCredits } from './credits'
import { liveness, readiness } from './health'
import { apiIndex, openApiDocumentRoute } from './api'
import { getActivity, getGeneration, getGenerationContent } from './generations'
import { getStats } from './stats'
import { cancelResponse, createResponse, deleteResponse, getResponse, listResponseInputItems } from './responses'
import { createChatCompletion } from './chat-completions'
import { createMessage } from './messages'
import { createEmbeddings, listEmbeddingModels } from './embeddings'
import {
  createPresetFromChatCompletions,
  createPresetFromMessages,
  createPresetFromResponses,
  getPreset,
  getPresetVersion,
  listPresets,
  listPresetVersions,
} from './presets'
import { countModels, getModel, listImageModels, listModelEndpoints, listModels, listProviders, listUserModels, listZeroDataRetentionEndpoints } from './models'
import {
  chatInternRoute,
  chatCompletionsInternRoute,
  createInternRoute,
  deleteInternRoute,
  getInternRoute,
  listInternsRoute,
  provisionInternRoute,
  suspendInternRoute,
  updateInternRoute,
} from './interns'
import { createGuardrail, deleteGuardrail, getGuardrail, listGuardrails, updateGuardrail } from './guardrails'
import { keyAssignments, memberAssignments } from './guardrail-assignments'
import { deleteWorkspaceBudgetRoute, getWorkspaceBudget, listWorkspaceBudgets, setWorkspaceBudgetRoute } from './workspace-budgets'
import { createWorkspace, deleteWorkspace, getWorkspace, listWorkspaces, updateWorkspace } from './workspaces'
import { clearWorkspaceResponseCache } from './response-cache'

/** Every route the gateway serves, relative to its base path. */
export const routes: readonly AnyRoute[] = [
  apiIndex,
  openApiDocumentRoute(() => routes),
  liveness,
  readiness,
  listKeys,
  createKey,
  getKey,
  updateKey,
  deleteKey,
  getCurrentKey,
  getCredits,
  listWorkspaces,
  createWorkspace,
  getWorkspace,
  updateWorkspace,
  deleteWorkspace,
  listGuardrails,
  createGuardrail,
  getGuardrail,
  updateGuardrail,
  deleteGuardrail,
  keyAssignments.listAll,
  keyAssignments.listForGuardrail,
  keyAssignments.bulkAssign,
  keyAssignments.bulkUnassign,
  memberAssignments.listAll,
  memberAssignments.listForGuardrail,
  memberAssignments.bulkAssign,
  memberAssignments.bulkUnassign,
  listWorkspaceBudgets,
  getWorkspaceBudget,
  setWorkspaceBudgetRoute,
  deleteWorkspaceBudgetRoute,
  clearWorkspaceResponseCache,
  listByok,
  createByok,
  getByok,
  updateByok,
  deleteByok,
  createResponse,
  getResponse,
  deleteResponse,
  cancelResponse,
  listResponseInputItems,
  createChatCompletion,
  createMessage,
  createEmbeddings,
  listEmbeddingModels,
  listPresets,
  getPreset,
  createPresetFromResponses,
  createPresetFromChatCompletions,
  createPresetFromMessages,
  listPresetVersions,
  getPresetVersion,
  listModels,
  countModels,
  listUserModels,
  getModel,
  listModelEndpoints,
  listZeroDataRetentionEndpoints,
  listImageModels,
  listProviders,
  getGeneration,
  getGenerationContent,
  getActivity,
  listAuditLog,
  getStats,
  listInternsRoute,
  createInternRoute,
  getInternRoute,
  updateInternRoute,
  deleteInternRoute,
  provisionInternRoute,
  suspendInternRoute,
  chatInternRoute,
  chatCompletionsInternRoute,
]
