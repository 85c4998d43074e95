/**
 * What a legacy Azure credential's `endpoint_url` says, in canonical terms: where (scheme, host, port), which API
 * form (v1 or deployments), which deployment and which api-version. Nothing else of the caller's URL is kept: the
 * path is rebuilt from these, so a caller never chooses a path on anybody's host.
 */

import { DestinationRefusedError } from '../../core/upstream-guard'

export interface LegacyEndpoint {
  origin: string
  isV1: boolean
  deployment: string
  apiVersion: string
}

const TRAILING_SLASHES = /\/+$/
const V1_PATHS = ['/openai/v1', '/openai/v1/chat/completions']
const NAMED_DEPLOYMENT = /\/openai\/deployments\/([^/]+)/
// Azure's rules for deployment names; the leading letter or digit also keeps `.` and `..` out of the path.
const DEPLOYMENT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/
const API_VERSION = /^(?:\d{4}-\d{2}-\d{2}(?:-preview)?|v1|preview|latest)$/

/**
 * Reads a legacy endpoint; the deployment is the one the URL names, else `modelId`, and the api-version the URL's
 * when it has a valid one, else `defaultApiVersion`. Throws `DestinationRefusedError` for what cannot be rebuilt.
 */
export const readLegacyEndpoint = (endpointURL: string, modelId: string, defaultApiVersion: string): LegacyEndpoint => {
  let url: URL
  try {
    url = new URL(endpointURL)
  } catch {
    throw new DestinationRefusedError('must be a valid URL')
  }
  const path = url.pathname.replace(TRAILING_SLASHES, '')
  const named = NAMED_DEPLOYMENT.exec(path)?.[1]
  let deployment = modelId
  if (named !== undefined) {
    try {
      deployment = decodeURIComponent(named)
    } catch {
      throw new DestinationRefusedError('the deployment name must be 1 to 64 letters, digits, ".", "_" or "-"')
    }
  }
  const isV1 = V1_PATHS.some((suffix) => path.endsWith(suffix))
  if (!isV1 && !DEPLOYMENT_NAME.test(deployment)) {
    throw new DestinationRefusedError('the deployment name must be 1 to 64 letters, digits, ".", "_" or "-"')
  }
  const version = url.searchParams.get('api-version')
  return {
    // Scheme, host and port: userinfo, path and query go no further.
    origin: `${url.protocol}//${url.host}`,
    isV1,
    deployment,
    apiVersion: version !== null && API_VERSION.test(version) ? version : defaultApiVersion,
  }
}
