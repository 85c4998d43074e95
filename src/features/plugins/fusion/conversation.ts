/**
 * The caller's request as fusion's other models get it (panel members, the analyst): the conversation and its
 * settings, without the caller's function tools (nobody could run them for these runs) and without the fields that
 * choose models or run the caller's own tool loop.
 */

import type { ResponsesRequestBody } from '../../../engine/request.schemas'

export const withoutCallerTools = (body: ResponsesRequestBody): ResponsesRequestBody => {
  const { plugins: _plugins, models: _models, tools: _tools, tool_choice: _toolChoice, max_tool_calls: _maxToolCalls, stop_server_tools_when: _stop, ...rest } = body
  return rest
}
